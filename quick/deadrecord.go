package quick

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
)

// Values are hand-written protobuf (protowire): compact (a typical schedule
// value is under 40 bytes, a record with a 100-byte payload about 150),
// about ten times faster than JSON, and forward compatible because unknown
// fields are skipped. docs/design.md has the measurements.

// ErrCorrupt is wrapped by every decoding error: a value under the queue's
// subspace that does not decode.
var ErrCorrupt = errors.New("quick: corrupt value")

const (
	flagCheckpoint = 1 << 0
	// flagWaitable marks a job whose outcome is recorded when it finishes
	// (wait.go).
	flagWaitable = 1 << 1
)

// jobState is kept in the record: the schedule key says the rest.
type jobState uint64

const (
	stateActive jobState = 0
	stateDead   jobState = 1
)

// record is the value of a job's record, keyed by job ID. It is written at
// enqueue and when the job is re-placed (fail, snooze, release, requeue),
// never by a claim or a lease extension.
type record struct {
	TaskType    string
	Priority    int64
	ItemSpace   string
	Payload     []byte
	MaxAttempts int64
	UniqueKey   string
	CreatedAtMs int64
	PlacedAtMs  int64 // vesting time of the last placement
	PlacedLane  int64
	LastError   string
	State       jobState
	DeadAtMs    int64
	Attempts    int64 // runs started, as of the last re-placement
	Flags       uint64
	// RequeuedAtMs is when the job was last taken out of the dead letters,
	// so a Requeue retried after commit_unknown_result finds its own.
	RequeuedAtMs int64
	// Quarantined marks a dead letter made from a record that did not
	// decode: it holds no payload, so it cannot be requeued. The raw bytes
	// are kept under S(1,"x",...).
	Quarantined bool
	// RetainMs and History are the job's own retention and its errors
	// history (zjobValue), kept for Requeue and a cancel (retention.go).
	RetainMs int64
	History  []AttemptError
}

func (r *record) marshal() []byte {
	b := make([]byte, 0, 48+len(r.TaskType)+len(r.ItemSpace)+len(r.Payload)+len(r.UniqueKey)+len(r.LastError)+historyLen(r.History))
	b = wire.AppendString(b, 1, r.TaskType)
	b = wire.AppendVarint(b, 2, uint64(r.Priority))
	b = wire.AppendString(b, 3, r.ItemSpace)
	if len(r.Payload) > 0 {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Payload)
	}
	b = wire.AppendVarint(b, 5, uint64(r.MaxAttempts))
	b = wire.AppendString(b, 6, r.UniqueKey)
	b = wire.AppendVarint(b, 7, uint64(r.CreatedAtMs))
	b = wire.AppendVarint(b, 8, uint64(r.PlacedAtMs))
	b = wire.AppendVarint(b, 9, uint64(r.PlacedLane))
	b = wire.AppendString(b, 10, r.LastError)
	b = wire.AppendVarint(b, 11, uint64(r.State))
	b = wire.AppendVarint(b, 12, uint64(r.DeadAtMs))
	b = wire.AppendVarint(b, 13, uint64(r.Attempts))
	b = wire.AppendVarint(b, 14, r.Flags)
	b = wire.AppendVarint(b, 15, uint64(r.RequeuedAtMs))
	if r.Quarantined {
		b = wire.AppendVarint(b, 16, 1)
	}
	b = wire.AppendVarint(b, 17, uint64(r.RetainMs))
	b = appendHistory(b, 18, r.History)
	return b
}

func (r *record) unmarshal(b []byte) error {
	*r = record{}
	return walkValue(b, func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			r.TaskType = string(raw)
		case 2:
			r.Priority = int64(x)
		case 3:
			r.ItemSpace = string(raw)
		case 4:
			r.Payload = append([]byte(nil), raw...)
		case 5:
			r.MaxAttempts = int64(x)
		case 6:
			r.UniqueKey = string(raw)
		case 7:
			r.CreatedAtMs = int64(x)
		case 8:
			r.PlacedAtMs = int64(x)
		case 9:
			r.PlacedLane = int64(x)
		case 10:
			r.LastError = string(raw)
		case 11:
			r.State = jobState(x)
		case 12:
			r.DeadAtMs = int64(x)
		case 13:
			r.Attempts = int64(x)
		case 14:
			r.Flags = x
		case 15:
			r.RequeuedAtMs = int64(x)
		case 16:
			r.Quarantined = x != 0
		case 17:
			r.RetainMs = int64(x)
		case 18:
			e, err := decodeAttemptError(typ, raw)
			if err != nil {
				return err
			}
			r.History = append(r.History, e)
		}
		return nil
	})
}

// walkValue walks a stored value's fields, reporting garbage as ErrCorrupt.
func walkValue(b []byte, field func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error) error {
	if err := wire.Walk(b, field); err != nil {
		if errors.Is(err, wire.ErrMalformed) {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return err
	}
	return nil
}

// The lease index S(1,"l",id) holds the vesting time of a claimed job's
// schedule key; the lane follows from it (laneOf).

// decodeDeadRecord decodes S(1,"j",id). Only a dead letter keeps a record
// keyed by its ID (a live job is a key in its zone); a record in any other
// state is schema-1 data, which Open refuses, so it is ErrCorrupt.
func decodeDeadRecord(id ID, b []byte) (record, error) {
	var rec record
	if err := rec.unmarshal(b); err != nil {
		return record{}, fmt.Errorf("quick: job %s: %w", id, err)
	}
	if rec.State != stateDead {
		return record{}, fmt.Errorf("%w: job %s has a record that is not a dead letter (schema-1 data)", ErrCorrupt, id)
	}
	return rec, nil
}
