package memkv

import (
	"bytes"

	"github.com/quickfdb/quickfdb/kv"
)

// applyAtomic applies an atomic operation to a key's value, returning the new
// value and whether the key exists afterwards. It follows fdbclient/Atomic.h
// (release-7.3) at API version 730, where Min and BitAnd are the V2 forms: a
// missing key takes param.
func applyAtomic(op kv.MutationType, old []byte, present bool, param []byte) ([]byte, bool) {
	switch op {
	case kv.MutationAdd:
		return doAdd(old, param), true
	case kv.MutationBitAnd:
		if !present {
			return param, true
		}
		return doBitwise(old, param, func(a, b byte) byte { return a & b }, false), true
	case kv.MutationBitOr:
		if len(old) == 0 || len(param) == 0 {
			return param, true
		}
		return doBitwise(old, param, func(a, b byte) byte { return a | b }, true), true
	case kv.MutationBitXor:
		if len(old) == 0 || len(param) == 0 {
			return param, true
		}
		return doBitwise(old, param, func(a, b byte) byte { return a ^ b }, true), true
	case kv.MutationAppendIfFits:
		return doAppendIfFits(old, param), true
	case kv.MutationMax:
		return doMax(old, param), true
	case kv.MutationMin:
		if !present {
			return param, true
		}
		return doMin(old, param), true
	case kv.MutationByteMin:
		if !present || bytes.Compare(param, old) <= 0 {
			return param, true
		}
		return old, true
	case kv.MutationByteMax:
		if !present || bytes.Compare(old, param) <= 0 {
			return param, true
		}
		return old, true
	case kv.MutationCompareAndClear:
		if !present || bytes.Equal(old, param) {
			return nil, false
		}
		return old, true
	}
	// Callers validate op first; an unknown op leaves the value alone.
	return old, present
}

// isAtomicOp reports whether op is an atomic operation that reads the
// existing value (versionstamped sets are handled separately).
func isAtomicOp(op kv.MutationType) bool {
	switch op {
	case kv.MutationAdd, kv.MutationBitAnd, kv.MutationBitOr, kv.MutationBitXor,
		kv.MutationAppendIfFits, kv.MutationMax, kv.MutationMin,
		kv.MutationByteMin, kv.MutationByteMax, kv.MutationCompareAndClear:
		return true
	}
	return false
}

// doAdd is doLittleEndianAdd: the result has param's length; the existing
// value is zero-extended or truncated to it.
func doAdd(old, param []byte) []byte {
	if len(old) == 0 || len(param) == 0 {
		return param
	}
	out := make([]byte, len(param))
	carry := 0
	for i := range param {
		sum := int(param[i]) + carry
		if i < len(old) {
			sum += int(old[i])
		}
		out[i] = byte(sum)
		carry = sum >> 8
	}
	return out
}

// doBitwise combines old and param byte by byte over param's length. Past
// the end of old, the result takes param's byte (Or, Xor) or zero (And).
func doBitwise(old, param []byte, f func(a, b byte) byte, keepParamTail bool) []byte {
	if len(param) == 0 {
		return param
	}
	out := make([]byte, len(param))
	for i := range param {
		switch {
		case i < len(old):
			out[i] = f(old[i], param[i])
		case keepParamTail:
			out[i] = param[i]
		}
	}
	return out
}

func doAppendIfFits(old, param []byte) []byte {
	if len(old) == 0 {
		return param
	}
	if len(param) == 0 || len(old)+len(param) > kv.MaxValueSize {
		return old
	}
	out := make([]byte, 0, len(old)+len(param))
	return append(append(out, old...), param...)
}

// resized returns old zero-extended or truncated to n bytes.
func resized(old []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, old)
	return out
}

// doMax compares old and param as little-endian unsigned integers of param's
// length and keeps the larger.
func doMax(old, param []byte) []byte {
	if len(old) == 0 || len(param) == 0 {
		return param
	}
	i := len(param) - 1
	for ; i >= len(old); i-- {
		if param[i] != 0 {
			return param
		}
	}
	for ; i >= 0; i-- {
		if param[i] > old[i] {
			return param
		}
		if param[i] < old[i] {
			return resized(old, len(param))
		}
	}
	return param
}

// doMin is doMax's mirror; a present empty value counts as zero.
func doMin(old, param []byte) []byte {
	if len(param) == 0 {
		return param
	}
	i := len(param) - 1
	for ; i >= len(old); i-- {
		if param[i] != 0 {
			return resized(old, len(param))
		}
	}
	for ; i >= 0; i-- {
		if param[i] > old[i] {
			return resized(old, len(param))
		}
		if param[i] < old[i] {
			return param
		}
	}
	return param
}
