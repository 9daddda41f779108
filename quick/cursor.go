package quick

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrInvalidCursor means a listing was resumed with a cursor that is corrupt
// or came from another listing (another task type, or List's cursor given
// to ListDead).
var ErrInvalidCursor = errors.New("quick: invalid cursor")

// Cursor resumes a listing where a page ended: pass a page's Next as the
// next call's After. It is opaque and URL-safe, so a CLI or web console can
// hand it out and take it back as a string; the zero Cursor starts at the
// beginning. A cursor names its listing and task type, and a listing
// refuses another's with ErrInvalidCursor.
type Cursor string

// Cursor kinds, one per listing.
const (
	cursorList byte = 'l'
	cursorDead byte = 'd'
)

// cursorVersion leads the encoding, so a later layout can be told apart.
const cursorVersion = 1

// maxCursorLen bounds what a listing decodes: a key is at most 10,000 bytes.
const maxCursorLen = 16 << 10

// makeCursor encodes the key a page ended on, relative to prefix (the task
// type's subspace in the listing's key space).
func makeCursor(kind byte, taskType string, prefix, key []byte) Cursor {
	b := []byte{cursorVersion, kind}
	b = binary.AppendUvarint(b, uint64(len(taskType)))
	b = append(b, taskType...)
	b = append(b, bytes.TrimPrefix(key, prefix)...)
	return Cursor(base64.RawURLEncoding.EncodeToString(b))
}

// key decodes c for a listing of kind over taskType: the absolute key to
// resume after, nil for the zero cursor.
func (c Cursor) key(kind byte, taskType string, prefix []byte) ([]byte, error) {
	if c == "" {
		return nil, nil
	}
	if len(c) > maxCursorLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrInvalidCursor, len(c))
	}
	b, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil || len(b) < 2 || b[0] != cursorVersion {
		return nil, fmt.Errorf("%w: not a cursor of this version", ErrInvalidCursor)
	}
	if b[1] != kind {
		return nil, fmt.Errorf("%w: a cursor of another listing", ErrInvalidCursor)
	}
	n, w := binary.Uvarint(b[2:])
	if w <= 0 || n > uint64(len(b)-2-w) {
		return nil, fmt.Errorf("%w: truncated", ErrInvalidCursor)
	}
	rest := b[2+w:]
	if t := string(rest[:n]); t != taskType {
		return nil, fmt.Errorf("%w: a cursor of task type %q, not %q", ErrInvalidCursor, t, taskType)
	}
	return append(append([]byte(nil), prefix...), rest[n:]...), nil
}

// makePartsCursor encodes a cursor made of several byte strings (for a
// listing whose position is more than one key: List's pointer entry and
// the job key inside its lane).
func makePartsCursor(kind byte, taskType string, parts ...[]byte) Cursor {
	b := []byte{cursorVersion, kind}
	b = binary.AppendUvarint(b, uint64(len(taskType)))
	b = append(b, taskType...)
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return Cursor(base64.RawURLEncoding.EncodeToString(b))
}

// parts decodes a cursor makePartsCursor made for a listing of kind over
// taskType, with exactly n parts; nil for the zero cursor.
func (c Cursor) parts(kind byte, taskType string, n int) ([][]byte, error) {
	if c == "" {
		return nil, nil
	}
	if len(c) > maxCursorLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrInvalidCursor, len(c))
	}
	b, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil || len(b) < 2 || b[0] != cursorVersion {
		return nil, fmt.Errorf("%w: not a cursor of this version", ErrInvalidCursor)
	}
	if b[1] != kind {
		return nil, fmt.Errorf("%w: a cursor of another listing", ErrInvalidCursor)
	}
	b = b[2:]
	next := func() ([]byte, bool) {
		l, w := binary.Uvarint(b)
		if w <= 0 || l > uint64(len(b)-w) {
			return nil, false
		}
		p := b[w : w+int(l)]
		b = b[w+int(l):]
		return p, true
	}
	t, ok := next()
	if !ok {
		return nil, fmt.Errorf("%w: truncated", ErrInvalidCursor)
	}
	if string(t) != taskType {
		return nil, fmt.Errorf("%w: a cursor of task type %q, not %q", ErrInvalidCursor, t, taskType)
	}
	out := make([][]byte, n)
	for i := range out {
		p, ok := next()
		if !ok {
			return nil, fmt.Errorf("%w: truncated", ErrInvalidCursor)
		}
		out[i] = append([]byte(nil), p...)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes too many", ErrInvalidCursor, len(b))
	}
	return out, nil
}
