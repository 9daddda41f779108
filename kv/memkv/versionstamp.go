package memkv

import (
	"encoding/binary"
)

// versionstampSize is the length of FDB's versionstamp: an 8-byte big-endian
// commit version and a 2-byte big-endian order within the commit batch.
const versionstampSize = 10

// versionstamp builds the 10-byte stamp for a commit. Every commit here is its
// own batch and gets a version of its own, so order 0 keeps stamps unique and
// increasing in commit order.
func versionstamp(version int64, order uint16) []byte {
	out := make([]byte, versionstampSize)
	binary.BigEndian.PutUint64(out, uint64(version))
	binary.BigEndian.PutUint16(out[8:], order)
	return out
}

// stampOffset reads the placeholder offset from the last 4 bytes of a
// versionstamped parameter (little-endian) and checks that a whole stamp fits
// in what precedes them, as getVersionstampKeyRange and the
// SetVersionstampedValue check in ReadYourWrites.actor.cpp do.
func stampOffset(param []byte) (int, bool) {
	if len(param) < 4 {
		return 0, false
	}
	pos := int(int32(binary.LittleEndian.Uint32(param[len(param)-4:])))
	if pos < 0 || pos+versionstampSize > len(param)-4 {
		return 0, false
	}
	return pos, true
}

// placeStamp returns param without its offset suffix, with stamp written at
// the offset. The offset must have been validated by stampOffset.
func placeStamp(param []byte, pos int, stamp []byte) []byte {
	out := make([]byte, len(param)-4)
	copy(out, param)
	copy(out[pos:], stamp)
	return out
}

// versionstampKeyRange is the range where a versionstamped key may land:
// the stamp between (minVersion, 0) and all 0xff bytes. It becomes unreadable
// to the transaction that wrote it (fdbclient/Atomic.h,
// getVersionstampKeyRange), capped at the end of the normal keyspace.
func versionstampKeyRange(param []byte, pos int, minVersion int64) (begin, end []byte) {
	begin = placeStamp(param, pos, versionstamp(minVersion, 0))
	end = make([]byte, len(param)-3) // the key and one zero byte: keyAfter
	copy(end, param[:len(param)-4])
	for i := pos; i < pos+versionstampSize; i++ {
		end[i] = 0xff
	}
	return begin, minKey(end, maxUserKey)
}
