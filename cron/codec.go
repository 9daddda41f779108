package cron

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/quick"
)

// Stored values are a version byte followed by protobuf fields (protowire):
// compact, and forward compatible within a version, since unknown fields
// are skipped. A value with another version byte is refused rather than
// misread. Decoding never panics on garbage; it returns ErrCorrupt.

const (
	definitionVersion = 1
	envelopeVersion   = 1
)

// Field numbers of a definition.
const (
	defSpec        = 1
	defTimeZone    = 2
	defTaskType    = 3
	defPayload     = 4
	defPriority    = 5
	defMaxAttempts = 6
	defMissedRuns  = 7
	defGen         = 8
	defPrevType    = 9
)

// Field numbers of an occurrence envelope.
const (
	envName        = 1
	envScheduledMs = 2
	envGen         = 3
	envPayload     = 4
	envAfterMs     = 5
)

func (d definition) marshal() []byte {
	b := make([]byte, 0, 32+len(d.Spec)+len(d.TimeZone)+len(d.TaskType)+len(d.Payload))
	b = append(b, definitionVersion)
	b = wire.AppendBytes(b, defSpec, []byte(d.Spec))
	b = wire.AppendBytes(b, defTimeZone, []byte(d.TimeZone))
	b = wire.AppendBytes(b, defTaskType, []byte(d.TaskType))
	b = wire.AppendBytes(b, defPayload, d.Payload)
	b = wire.AppendVarint(b, defPriority, uint64(d.Priority))
	b = wire.AppendVarint(b, defMaxAttempts, uint64(d.MaxAttempts))
	b = wire.AppendVarint(b, defMissedRuns, uint64(d.MissedRuns))
	if d.PrevTaskType != "" {
		b = wire.AppendBytes(b, defPrevType, []byte(d.PrevTaskType))
	}
	b = protowire.AppendTag(b, defGen, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, d.Gen)
}

// unmarshalDefinition decodes a stored definition; the name comes from its
// key.
func unmarshalDefinition(name string, v []byte) (definition, error) {
	d := definition{Schedule: Schedule{Name: name}}
	if len(v) == 0 || v[0] != definitionVersion {
		return d, fmt.Errorf("%w: schedule %q: definition version %s", ErrCorrupt, name, versionOf(v))
	}
	err := walkValue(v[1:], func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case defSpec:
			d.Spec = string(raw)
		case defTimeZone:
			d.TimeZone = string(raw)
		case defTaskType:
			d.TaskType = string(raw)
		case defPayload:
			d.Payload = append([]byte(nil), raw...)
		case defPriority:
			d.Priority = quick.Priority(x)
		case defMaxAttempts:
			d.MaxAttempts = int(int32(x))
		case defMissedRuns:
			d.MissedRuns = MissedRuns(int32(x))
		case defGen:
			if typ != protowire.Fixed64Type {
				return fmt.Errorf("%w: generation has wire type %d", ErrCorrupt, typ)
			}
			d.Gen = x
		case defPrevType:
			d.PrevTaskType = string(raw)
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("schedule %q: %w", name, err)
	}
	return d, nil
}

// envelope is an occurrence's job payload: which schedule, which time, and
// the schedule's own payload.
type envelope struct {
	Name        string
	ScheduledAt time.Time
	Gen         uint64
	Payload     []byte
	// After is the scheduled time of the occurrence whose completion
	// enqueued this one, or the time a changed schedule's first occurrence
	// was computed after (see Register); zero when Register or Repair
	// started a chain (and in payloads written before the field existed).
	After time.Time
}

func (e envelope) marshal() []byte {
	b := make([]byte, 0, envelopeOverhead+len(e.Name)+len(e.Payload))
	b = append(b, envelopeVersion)
	b = wire.AppendBytes(b, envName, []byte(e.Name))
	b = wire.AppendVarint(b, envScheduledMs, uint64(e.ScheduledAt.UnixMilli()))
	b = protowire.AppendTag(b, envGen, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, e.Gen)
	if !e.After.IsZero() {
		b = wire.AppendVarint(b, envAfterMs, uint64(e.After.UnixMilli()))
	}
	return wire.AppendBytes(b, envPayload, e.Payload)
}

func unmarshalEnvelope(v []byte) (envelope, error) {
	var e envelope
	if len(v) == 0 || v[0] != envelopeVersion {
		return e, fmt.Errorf("%w: occurrence payload version %s", ErrCorrupt, versionOf(v))
	}
	var haveName, haveTime bool
	err := walkValue(v[1:], func(num protowire.Number, typ protowire.Type, raw []byte, x uint64) error {
		switch num {
		case envName:
			e.Name, haveName = string(raw), true
		case envScheduledMs:
			e.ScheduledAt, haveTime = time.UnixMilli(int64(x)).UTC(), true
		case envGen:
			if typ != protowire.Fixed64Type {
				return fmt.Errorf("%w: generation has wire type %d", ErrCorrupt, typ)
			}
			e.Gen = x
		case envPayload:
			e.Payload = append([]byte(nil), raw...)
		case envAfterMs:
			e.After = time.UnixMilli(int64(x)).UTC()
		}
		return nil
	})
	if err != nil {
		return e, err
	}
	if !haveName || !haveTime || e.Name == "" {
		return e, fmt.Errorf("%w: occurrence payload lacks the schedule name or time", ErrCorrupt)
	}
	return e, nil
}

func versionOf(v []byte) string {
	if len(v) == 0 {
		return "missing (empty value)"
	}
	return fmt.Sprintf("%d unknown", v[0])
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
