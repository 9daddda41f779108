package tuple

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrInvalidEncoding is wrapped by every *DecodeError.
	ErrInvalidEncoding = errors.New("tuple: invalid encoding")

	// ErrUnsupportedType means an element has a Go type the tuple layer
	// cannot encode.
	ErrUnsupportedType = errors.New("tuple: unsupported element type")

	// ErrIntegerTooLarge means an integer's magnitude needs more than the
	// 255 bytes the length-prefixed encoding can express.
	ErrIntegerTooLarge = errors.New("tuple: integer magnitude exceeds 255 bytes")

	// ErrIncompleteVersionstamp means an incomplete Versionstamp was given
	// to Pack; such tuples must go through PackWithVersionstamp.
	ErrIncompleteVersionstamp = errors.New("tuple: incomplete versionstamp outside PackWithVersionstamp")

	// ErrNoIncompleteVersionstamp means PackWithVersionstamp found no
	// placeholder for the database to fill in.
	ErrNoIncompleteVersionstamp = errors.New("tuple: no incomplete versionstamp in tuple")

	// ErrMultipleIncompleteVersionstamps means a tuple holds more than one
	// placeholder; a versionstamp mutation can fill in only one.
	ErrMultipleIncompleteVersionstamps = errors.New("tuple: more than one incomplete versionstamp in tuple")

	// ErrNotInSubspace means a key does not start with a subspace's prefix.
	ErrNotInSubspace = errors.New("tuple: key is not in subspace")
)

// DecodeError describes why a byte string is not a valid tuple encoding.
type DecodeError struct {
	// Offset is the position in the input of the element (or byte) at
	// fault. For Subspace.Unpack it counts from the start of the whole key.
	Offset int
	// Reason is a short human-readable explanation.
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("tuple: invalid encoding at offset %d: %s", e.Offset, e.Reason)
}

// Unwrap lets errors.Is(err, ErrInvalidEncoding) succeed.
func (e *DecodeError) Unwrap() error { return ErrInvalidEncoding }

// EncodeError describes an element that could not be encoded.
type EncodeError struct {
	// Path holds the element's index in the tuple, followed by its index in
	// each nested tuple on the way down.
	Path []int
	// Value is the offending element.
	Value any
	// Err is one of the sentinel errors above.
	Err error
}

func (e *EncodeError) Error() string {
	path := make([]string, len(e.Path))
	for i, p := range e.Path {
		path[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("%v: element at index %s (type %T)", e.Err, strings.Join(path, "."), e.Value)
}

func (e *EncodeError) Unwrap() error { return e.Err }
