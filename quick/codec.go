package quick

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
)

// The queue keeps the whole job in its key's value (zjobValue), so a
// job costs one set to enqueue, a clear and a set to claim and one clear to
// complete: the floor of a queue whose claim is a move (docs/design.md,
// "Cost per job"). Payloads and checkpoints over InlinePayload bytes are
// kept once under Z (3, id) and Z (4, id) instead, so a claim does not
// rewrite them.

// InlinePayload is the largest payload (and checkpoint) kept in the job key's
// value; larger ones are written once beside it.
const InlinePayload = 1024

// Flags of a job, beside flagCheckpoint and flagWaitable.
const (
	// flagBlob: the payload is under Z (3, id), not inline.
	flagBlob = 1 << 2
	// flagCkptBlob: the checkpoint is under Z (4, id), not inline.
	flagCkptBlob = 1 << 3
	// flagTrackable: the job has a lookup index S (2, "i", id), kept at
	// every move, so Get, Cancel and RunNow find it by ID.
	flagTrackable = 1 << 4
	// flagZones marks a record (a dead letter) of a job, so
	// that Requeue places it back into its zone.
	flagZones = 1 << 5
	// flagSplit: a claim moved the job out of its lane once already
	// (split.go); it is not moved again, and a lane of such jobs is not
	// split.
	flagSplit = 1 << 6
)

// zjobValue is the value of a job key.
type zjobValue struct {
	Payload     []byte // inline payload (flagBlob unset)
	Attempt     int64  // runs started
	Token       uint64 // lease token; 0 when pending
	Holder      string
	LeasedAtMs  int64
	MaxAttempts int64
	Flags       uint64
	UniqueKey   string
	LastError   string
	Checkpoint  []byte // inline checkpoint (flagCheckpoint set, flagCkptBlob unset)
	// CreatedAtMs is when the job was enqueued, kept only when it differs
	// from its ID's time (IDs given by the caller).
	CreatedAtMs int64
	// RetainMs is the job's own retention (NewJob.Retain): > 0 keeps its
	// finished record that long, < 0 keeps none; 0 (not stored) follows
	// its task type (retention.go).
	RetainMs int64
	// History is the errors of its last failed attempts, oldest first, at
	// most maxRetainedErrors; kept only for a job with retention
	// (retention.go), so other jobs never carry it.
	History []AttemptError
	// Trace is the span context of the job's insert (trace.go), empty
	// when it has none.
	Trace []byte
}

func (v *zjobValue) hasCheckpoint() bool { return v.Flags&flagCheckpoint != 0 }

func (v *zjobValue) marshal() []byte {
	b := make([]byte, 0, 24+len(v.Payload)+len(v.Holder)+len(v.UniqueKey)+len(v.LastError)+len(v.Checkpoint)+historyLen(v.History)+len(v.Trace))
	b = wire.AppendBytes(b, 1, v.Payload)
	b = wire.AppendVarint(b, 2, uint64(v.Attempt))
	if v.Token != 0 {
		b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, v.Token)
	}
	b = wire.AppendString(b, 4, v.Holder)
	b = wire.AppendVarint(b, 5, uint64(v.LeasedAtMs))
	b = wire.AppendVarint(b, 6, uint64(v.MaxAttempts))
	b = wire.AppendVarint(b, 7, v.Flags)
	b = wire.AppendString(b, 8, v.UniqueKey)
	b = wire.AppendString(b, 9, v.LastError)
	b = wire.AppendBytes(b, 10, v.Checkpoint)
	b = wire.AppendVarint(b, 11, uint64(v.CreatedAtMs))
	b = wire.AppendVarint(b, 12, uint64(v.RetainMs))
	b = appendHistory(b, 13, v.History)
	b = wire.AppendBytes(b, 14, v.Trace)
	return b
}

func (v *zjobValue) unmarshal(b []byte) error {
	*v = zjobValue{}
	return walkValue(b, func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			v.Payload = raw
		case 2:
			v.Attempt = int64(x)
		case 3:
			if typ != protowire.Fixed64Type {
				return fmt.Errorf("%w: token has wire type %d", ErrCorrupt, typ)
			}
			v.Token = x
		case 4:
			v.Holder = string(raw)
		case 5:
			v.LeasedAtMs = int64(x)
		case 6:
			v.MaxAttempts = int64(x)
		case 7:
			v.Flags = x
		case 8:
			v.UniqueKey = string(raw)
		case 9:
			v.LastError = string(raw)
		case 10:
			v.Checkpoint = raw
		case 11:
			v.CreatedAtMs = int64(x)
		case 12:
			v.RetainMs = int64(x)
		case 13:
			e, err := decodeAttemptError(typ, raw)
			if err != nil {
				return err
			}
			v.History = append(v.History, e)
		case 14:
			v.Trace = clone(raw) // the lease keeps it past the read's buffer
		}
		return nil
	})
}

// exhausted reports whether every attempt of the job has been spent.
func (v *zjobValue) exhausted() bool { return v.MaxAttempts > 0 && v.Attempt >= v.MaxAttempts }

// laneState is the value of Z (1, prio, lane): where the lane's pointer is
// (PtrMs) and, while a worker leases the lane, its token and name. A lane
// holding any job key has a lane state and a pointer; while the lane is not
// leased the pointer vests no later than the lane's earliest key.
type laneState struct {
	PtrMs  int64
	Token  uint64 // nonzero while leased: the lease ends at PtrMs
	Holder string
	// Short is set while the holder runs the lane's jobs without per-job
	// leases (short-job mode): only the lane lease protects them.
	Short bool
	// Vested is set when the unleased pointer was filed already vested (new
	// work, or a lane handed back with vested jobs: pointer.go), so that an
	// enqueue whose clock reads a little behind the writer's does not take
	// it for a future one and pull it among its second's new work
	// (applyCover).
	Vested bool
	// Parked is set when a claim filed the unleased pointer late on
	// purpose, at when the lane's tenant may start a job again under its
	// limits (limitgate.go): an enqueue does not pull it earlier.
	Parked bool
	// HeldMs, on the state a tenant operation's fence wrote, is the
	// deadline of the short-job lane lease the fence displaced: its
	// holder may run the lane's jobs until then without per-job leases,
	// so a move's copy vests them no earlier (move_copy.go).
	HeldMs int64
}

func (s *laneState) leased() bool { return s.Token != 0 }

func (s *laneState) marshal() []byte {
	b := make([]byte, 0, 24+len(s.Holder))
	b = wire.AppendVarint(b, 1, uint64(s.PtrMs))
	if s.Token != 0 {
		b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, s.Token)
	}
	b = wire.AppendString(b, 3, s.Holder)
	if s.Short {
		b = wire.AppendVarint(b, 4, 1)
	}
	if s.Vested {
		b = wire.AppendVarint(b, 5, 1)
	}
	if s.Parked {
		b = wire.AppendVarint(b, 6, 1)
	}
	if s.HeldMs != 0 {
		b = wire.AppendVarint(b, 7, uint64(s.HeldMs))
	}
	return b
}

func (s *laneState) unmarshal(b []byte) error {
	*s = laneState{}
	return walkValue(b, func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case 1:
			s.PtrMs = int64(x)
		case 2:
			if typ != protowire.Fixed64Type {
				return fmt.Errorf("%w: lane token has wire type %d", ErrCorrupt, typ)
			}
			s.Token = x
		case 3:
			s.Holder = string(raw)
		case 4:
			s.Short = x != 0
		case 5:
			s.Vested = x != 0
		case 6:
			s.Parked = x != 0
		case 7:
			s.HeldMs = int64(x)
		}
		return nil
	})
}

// pointerValue is the value of a pointer index entry: the zone it points to,
// so a worker that picks the entry finds the zone's keys.
type pointerValue struct {
	Zone      []byte // the zone's key prefix
	ItemSpace string
}

func (p *pointerValue) marshal() []byte {
	b := make([]byte, 0, 8+len(p.Zone)+len(p.ItemSpace))
	b = wire.AppendBytes(b, 1, p.Zone)
	b = wire.AppendString(b, 2, p.ItemSpace)
	return b
}

func (p *pointerValue) unmarshal(b []byte) error {
	*p = pointerValue{}
	return walkValue(b, func(num protowire.Number, _ protowire.Type, raw []byte, _ uint64) error {
		switch num {
		case 1:
			p.Zone = append([]byte(nil), raw...)
		case 2:
			p.ItemSpace = string(raw)
		}
		return nil
	})
}

// zoneMeta is the value of Z (2): how many lanes new jobs of the zone are
// spread over. Missing means Options.ZoneLanes.
type zoneMeta struct {
	Lanes int64
}

func (m *zoneMeta) marshal() []byte { return wire.AppendVarint(nil, 1, uint64(m.Lanes)) }

func (m *zoneMeta) unmarshal(b []byte) error {
	*m = zoneMeta{}
	err := walkValue(b, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
		if num == 1 {
			m.Lanes = int64(x)
		}
		return nil
	})
	if err == nil && (m.Lanes < 0 || m.Lanes > maxZoneLanes) {
		return fmt.Errorf("%w: zone meta has %d lanes", ErrCorrupt, m.Lanes)
	}
	return err
}
