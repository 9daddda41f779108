package quick

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
)

// A corrupt entry (a schedule key that does not parse, a schedule value or
// a record that does not decode) must never cost a healthy job its turn, nor
// stay where every claim pays for it again. A claim that meets one moves it
// out of the schedule in the same transaction, within its byte budget:
//
//   - a schedule value that does not decode, with a record that does: the
//     job is dead-lettered with the decode error (requeue runs it again);
//   - a record that does not decode: its raw bytes go to S(1,"x",hash) and
//     the job becomes a quarantined dead letter with the error (no payload,
//     so it cannot be requeued; cancel removes it);
//   - a schedule key that does not parse (no job ID to name): key and value
//     go to S(1,"x",hash).
//
// Every quarantine adds 1 to S(1,"xn"). ListQuarantined shows the raw
// entries; dead letters show in ListDead and the dead count.

// Quarantined is a raw entry a claim moved out of the schedule because it
// did not decode.
type Quarantined struct {
	// Key and Value are the entry as found (Value cut to fit one FDB value
	// when Truncated).
	Key, Value []byte
	Truncated  bool
	// Error is why it did not decode.
	Error string
	At    time.Time
}

// quarantineOverhead bounds what a quarantine writes besides the raw bytes:
// the quarantine key, the error text, a small dead record and index keys.
const quarantineOverhead = 4 << 10

func encodeQuarantine(key, value []byte, errText string, at time.Time) []byte {
	errText = truncate(errText, maxErrorLen)
	room := kv.MaxValueSize - len(key) - len(errText) - 64
	trunc := false
	if len(value) > room {
		value, trunc = value[:max(room, 0)], true
	}
	b := wire.AppendBytes(nil, 1, key)
	b = wire.AppendBytes(b, 2, value)
	b = wire.AppendString(b, 3, errText)
	b = wire.AppendVarint(b, 4, uint64(at.UnixMilli()))
	if trunc {
		b = wire.AppendVarint(b, 5, 1)
	}
	return b
}

func decodeQuarantine(b []byte) (Quarantined, error) {
	var out Quarantined
	err := walkValue(b, func(num protowire.Number, _ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			out.Key = append([]byte(nil), raw...)
		case 2:
			out.Value = append([]byte(nil), raw...)
		case 3:
			out.Error = string(raw)
		case 4:
			out.At = time.UnixMilli(int64(x))
		case 5:
			out.Truncated = x != 0
		}
		return nil
	})
	return out, err
}

// quarantineRaw moves an entry that cannot be read as a job out of the
// schedule. It returns the bytes it writes.
func (q *Queue) quarantineRaw(tr kv.Transaction, now time.Time, key, value []byte, cause error) int {
	q.opts.Logger.Warn("quick: quarantining an entry that does not decode", "key", fmt.Sprintf("%x", key), "err", cause)
	tr.Clear(key)
	v := encodeQuarantine(key, value, cause.Error(), now)
	qk := q.k.quarKey(key)
	tr.Set(qk, v)
	tr.Add(q.k.quarN, le64(1))
	return len(key) + len(qk) + len(v)
}

// ListQuarantined lists the raw entries claims moved out of the schedule
// because they did not decode, in key order. Pass the last entry's key
// hash (Next) to resume.
//
// Keys: one range read of S(1,"x") of at most limit keys.
func (q *Queue) ListQuarantined(ctx context.Context, limit int) ([]Quarantined, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []Quarantined
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		kvs, err := tr.Snapshot().GetRange(rangeOf(q.k.quar), kv.RangeOptions{Limit: limit}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			e, err := decodeQuarantine(p.Value)
			if err != nil {
				e = Quarantined{Value: p.Value, Error: err.Error()}
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quick: list quarantined: %w", err)
	}
	return out, nil
}

// QuarantineCount returns how many entries claims quarantined (one read of
// an atomic counter).
func (q *Queue) QuarantineCount(ctx context.Context) (int64, error) {
	var n int64
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Snapshot().Get(q.k.quarN).Get()
		n = decodeCounter(v)
		return err
	})
	return n, err
}
