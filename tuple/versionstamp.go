package tuple

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Versionstamp is FoundationDB's 12-byte versionstamp: a 10-byte transaction
// version assigned by the cluster at commit, and a 2-byte user version that
// orders several versionstamps written by one transaction.
//
// A Versionstamp whose TransactionVersion is all 0xff bytes is incomplete:
// a placeholder for the commit version, packed with PackWithVersionstamp and
// filled in by a SetVersionstampedKey mutation.
type Versionstamp struct {
	TransactionVersion [10]byte
	UserVersion        uint16
}

const versionstampLen = 12

// incompleteTransactionVersion is the placeholder the official bindings use;
// FoundationDB never assigns it to a real commit.
var incompleteTransactionVersion = [10]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// IncompleteVersionstamp returns a placeholder versionstamp for a key that
// will be written with a versionstamp mutation.
func IncompleteVersionstamp(userVersion uint16) Versionstamp {
	return Versionstamp{TransactionVersion: incompleteTransactionVersion, UserVersion: userVersion}
}

// IsComplete reports whether v holds a real transaction version rather than
// the placeholder.
func (v Versionstamp) IsComplete() bool {
	return v.TransactionVersion != incompleteTransactionVersion
}

// Bytes returns the 12 bytes that follow the type code in the encoding:
// the transaction version, then the user version big-endian.
func (v Versionstamp) Bytes() []byte {
	b := make([]byte, versionstampLen)
	copy(b, v.TransactionVersion[:])
	binary.BigEndian.PutUint16(b[10:], v.UserVersion)
	return b
}

// String matches the official binding's format, e.g.
// Versionstamp(\x00\x00\x00\xaa\x00\xbb\x00\xcc\x00\xdd, 620).
func (v Versionstamp) String() string {
	return fmt.Sprintf("Versionstamp(%s, %d)", printable(v.TransactionVersion[:]), v.UserVersion)
}

// PackWithVersionstamp packs t after prefix for use as the key of a
// SetVersionstampedKey mutation. t must hold exactly one incomplete
// Versionstamp (at any nesting depth). The result ends with the 4-byte
// little-endian offset of that versionstamp's 10-byte transaction version,
// counted from the start of prefix: the layout of API version 520 and
// later, which the database strips before writing the key.
//
// Unlike Pack it reports unencodable elements as an *EncodeError rather
// than panicking, since it already returns an error.
func (t Tuple) PackWithVersionstamp(prefix []byte) ([]byte, error) {
	buf := make([]byte, 0, len(prefix)+sizeHint(t)+4)
	buf = append(buf, prefix...)
	e := encoder{buf: buf, allowIncomplete: true}
	if err := e.tuple(t, false); err != nil {
		return nil, err
	}
	switch {
	case e.incomplete == 0:
		return nil, ErrNoIncompleteVersionstamp
	case e.incomplete > 1:
		return nil, ErrMultipleIncompleteVersionstamps
	case uint64(e.versionstampPos) > math.MaxUint32:
		// Unreachable for real keys (FDB caps them at 10 kB), but the
		// offset field is only 32 bits wide.
		return nil, fmt.Errorf("tuple: versionstamp offset %d does not fit in 32 bits", e.versionstampPos)
	}
	return binary.LittleEndian.AppendUint32(e.buf, uint32(e.versionstampPos)), nil
}

// HasIncompleteVersionstamp reports whether t (or a tuple nested in it)
// holds an incomplete Versionstamp. As in the official binding, more than
// one yields true together with ErrMultipleIncompleteVersionstamps.
func (t Tuple) HasIncompleteVersionstamp() (bool, error) {
	n := countIncomplete(t)
	if n > 1 {
		return true, ErrMultipleIncompleteVersionstamps
	}
	return n == 1, nil
}

func countIncomplete(t Tuple) int {
	n := 0
	for _, el := range t {
		switch x := el.(type) {
		case Versionstamp:
			if !x.IsComplete() {
				n++
			}
		case Tuple:
			n += countIncomplete(x)
		}
	}
	return n
}
