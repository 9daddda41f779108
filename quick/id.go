package quick

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

// ID identifies a job: a UUID, stored with the tuple layer's UUID type.
// Generated IDs are time-ordered (UUID version 7), which is what lets the
// enqueue markers that make retries idempotent be purged with one range
// clear: markers sort by the time their ID was made.
type ID [16]byte

// NewID returns a version 7 UUID for time t. Generate an ID once per job,
// outside any retry loop, and pass it in NewJob.ID when enqueueing inside
// your own transaction: a retry after commit_unknown_result then finds the
// first attempt's job instead of creating a second. With a Queue at hand,
// prefer Queue.NewID, which reads the queue's clock (the one enqueue checks
// the ID's age on); NewID is for code without one, or a time of its own.
func NewID(t time.Time) ID {
	id := idFloor(t)
	if _, err := rand.Read(id[6:]); err != nil {
		panic(fmt.Sprintf("quick: crypto/rand failed: %v", err))
	}
	id[6] = 0x70 | id[6]&0x0f // version 7
	id[8] = 0x80 | id[8]&0x3f // RFC 9562 variant
	return id
}

// DeterministicID returns a version 7 UUID for time t whose other bits come
// from seed: the same (t, seed) always gives the same ID, as cron needs for
// its occurrences. 74 of the seed's 80 bits are kept: the version takes the
// high 4 bits of seed[0] and the variant the high 2 of seed[2], so two
// seeds that differ only there give the same ID; derive seeds from a hash
// (as cron does), not from small counters placed in those bits.
func DeterministicID(t time.Time, seed [10]byte) ID {
	id := idFloor(t)
	copy(id[6:], seed[:])
	id[6] = 0x70 | id[6]&0x0f
	id[8] = 0x80 | id[8]&0x3f
	return id
}

// Time returns the time a version 7 ID was made at (zero for other IDs).
func (id ID) Time() time.Time {
	if !id.isV7() {
		return time.Time{}
	}
	ms := uint64(binary.BigEndian.Uint16(id[0:2]))<<32 | uint64(binary.BigEndian.Uint32(id[2:6]))
	return time.UnixMilli(int64(ms))
}

func (id ID) isV7() bool { return id[6]>>4 == 7 && id[8]>>6 == 2 }

// IsZero reports whether id is the zero ID (none given).
func (id ID) IsZero() bool { return id == ID{} }

// String formats id as a canonical UUID.
func (id ID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return string(b[:])
}

// ParseID parses a canonical UUID (with or without dashes).
func ParseID(s string) (ID, error) {
	var id ID
	clean := make([]byte, 0, 32)
	for i := 0; i < len(s); i++ {
		if s[i] != '-' {
			clean = append(clean, s[i])
		}
	}
	if len(clean) != 32 {
		return id, fmt.Errorf("%w: %q is not a UUID", ErrInvalidID, s)
	}
	if _, err := hex.Decode(id[:], clean); err != nil {
		return id, fmt.Errorf("%w: %q is not a UUID: %v", ErrInvalidID, s, err)
	}
	return id, nil
}

// idFloor is the smallest version 7 ID of time t: every ID made before t
// sorts below it.
func idFloor(t time.Time) ID {
	var id ID
	ms := uint64(t.UnixMilli())
	binary.BigEndian.PutUint16(id[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(id[2:6], uint32(ms))
	return id
}
