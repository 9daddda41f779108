package tuple

import (
	"bytes"
	"strings"
)

// Pack returns the encoding of t. It panics with an *EncodeError if t holds
// an element of an unsupported type, an integer beyond 255 bytes or an
// incomplete Versionstamp: those are programming errors, and the official
// binding panics too. Use PackChecked to get the error instead.
func (t Tuple) Pack() []byte {
	b, err := t.PackChecked()
	if err != nil {
		panic(err)
	}
	return b
}

// PackChecked is Pack that returns an *EncodeError instead of panicking.
func (t Tuple) PackChecked() ([]byte, error) {
	return appendTuple(make([]byte, 0, sizeHint(t)), t, false)
}

// Range returns the keys bounding every tuple that strictly extends t:
// Pack(t)+0x00 and Pack(t)+0xff, like the official FDBRangeKeys.
func (t Tuple) Range() (begin, end []byte) {
	p := t.Pack()
	return append(p[:len(p):len(p)], 0x00), append(p[:len(p):len(p)], 0xff)
}

// encoder appends one tuple's encoding to buf and remembers where an
// incomplete versionstamp went, for PackWithVersionstamp.
type encoder struct {
	buf             []byte
	allowIncomplete bool
	incomplete      int // how many incomplete versionstamps were written
	versionstampPos int // offset in buf of the last one's 12 bytes
}

// appendTuple appends t's top-level encoding to buf. allowIncomplete admits
// incomplete versionstamps (PackWithVersionstamp checks their count).
func appendTuple(buf []byte, t Tuple, allowIncomplete bool) ([]byte, error) {
	e := encoder{buf: buf, allowIncomplete: allowIncomplete}
	if err := e.tuple(t, false); err != nil {
		return nil, err
	}
	return e.buf, nil
}

func (e *encoder) tuple(t Tuple, nested bool) error {
	if nested {
		e.buf = append(e.buf, codeNested)
	}
	for i, el := range t {
		if err := e.element(el, nested); err != nil {
			if ee, ok := err.(*EncodeError); ok {
				ee.Path = append([]int{i}, ee.Path...)
				return ee
			}
			return &EncodeError{Path: []int{i}, Value: el, Err: err}
		}
	}
	if nested {
		e.buf = append(e.buf, 0x00)
	}
	return nil
}

func (e *encoder) element(el any, nested bool) error {
	switch x := el.(type) {
	case nil:
		e.buf = append(e.buf, codeNil)
		if nested {
			// A bare 0x00 would end the nested tuple.
			e.buf = append(e.buf, escapeByte)
		}
	case []byte:
		e.buf = appendEscaped(e.buf, codeBytes, x, bytes.IndexByte)
	case string:
		e.buf = appendEscaped(e.buf, codeString, x, strings.IndexByte)
	case Tuple:
		return e.tuple(x, true)
	case int64: // the common case, without the normalizing switch
		e.buf = appendInt64(e.buf, x)
	case float32:
		e.buf = appendFloat32(e.buf, x)
	case float64:
		e.buf = appendFloat64(e.buf, x)
	case bool:
		if x {
			e.buf = append(e.buf, codeTrue)
		} else {
			e.buf = append(e.buf, codeFalse)
		}
	case UUID:
		e.buf = append(e.buf, codeUUID)
		e.buf = append(e.buf, x[:]...)
	case Versionstamp:
		return e.versionstamp(x)
	default:
		n, ok := asInteger(el)
		if !ok {
			return ErrUnsupportedType
		}
		var err error
		if e.buf, err = appendInteger(e.buf, n); err != nil {
			return err
		}
	}
	return nil
}

func (e *encoder) versionstamp(v Versionstamp) error {
	if !v.IsComplete() {
		if !e.allowIncomplete {
			return ErrIncompleteVersionstamp
		}
		e.incomplete++
		e.versionstampPos = len(e.buf) + 1 // after the type code
	}
	e.buf = append(e.buf, codeVersionstamp)
	e.buf = append(e.buf, v.TransactionVersion[:]...)
	e.buf = append(e.buf, byte(v.UserVersion>>8), byte(v.UserVersion))
	return nil
}

// appendEscaped writes code, s with each 0x00 turned into 0x00 0xff, and a
// 0x00 terminator. The escape keeps order: 0xff sorts above any type code
// that could follow a terminator.
// indexByte is bytes.IndexByte or strings.IndexByte; passing it in avoids
// converting a string to []byte, which could allocate.
func appendEscaped[S []byte | string](buf []byte, code byte, s S, indexByte func(S, byte) int) []byte {
	buf = append(buf, code)
	for {
		i := indexByte(s, 0x00)
		if i < 0 {
			break
		}
		buf = append(buf, s[:i+1]...)
		buf = append(buf, escapeByte)
		s = s[i+1:]
	}
	buf = append(buf, s...)
	return append(buf, 0x00)
}

// sizeHint estimates the encoded size so that Pack usually allocates once.
// It ignores escapes; append grows the buffer when they occur.
func sizeHint(t Tuple) int {
	n := 0
	for _, el := range t {
		switch x := el.(type) {
		case []byte:
			n += len(x) + 2
		case string:
			n += len(x) + 2
		case Tuple:
			n += sizeHint(x) + 2
		case UUID:
			n += 1 + len(x)
		case Versionstamp:
			n += 1 + versionstampLen
		default:
			n += 9 // ints, floats, nil, bools; big ints just grow the buffer
		}
	}
	return n
}
