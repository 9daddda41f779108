package cron

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quickfdb/quickfdb/quick"
)

// Schedule is a recurring job: every time Spec fires, a job of TaskType
// carrying Payload runs.
type Schedule struct {
	// Name identifies the schedule; registering the same name again
	// replaces it.
	Name string
	// Spec is a cron spec: 5 fields (minute hour day-of-month month
	// day-of-week), or 6 with a leading seconds field, or a descriptor
	// (@hourly, @daily, @weekly, @monthly, @yearly, @every 5m). It may begin
	// with CRON_TZ=<zone> instead of setting TimeZone.
	Spec string
	// TimeZone is the IANA zone the spec's fields are read in; empty means
	// UTC (never the host's zone, which may differ between workers).
	TimeZone string
	// TaskType is the task type of the occurrences; a worker handles it
	// with Handle.
	TaskType string
	// Payload is handed to every occurrence (Occurrence.Payload).
	Payload []byte
	// Priority of the occurrences; zero means Normal.
	Priority quick.Priority
	// MaxAttempts bounds the runs of one occurrence; zero means the
	// queue's default. When the last attempt fails the occurrence is
	// dead-lettered and the next one is scheduled all the same.
	MaxAttempts int
	// MissedRuns says what happens to the times that passed while an
	// occurrence waited or ran late; the default is RunOnce.
	MissedRuns MissedRuns
}

// MissedRuns is the policy for schedule times that passed without an
// occurrence: while the previous one waited for a worker, retried, or while
// no worker ran at all.
type MissedRuns int

const (
	// RunOnce runs the missed times once, right away, as the latest of
	// them; then the schedule carries on. A daily job whose workers were
	// down for three days runs once when they return, not three times.
	RunOnce MissedRuns = iota
	// SkipAll skips the missed times; the next occurrence is the first
	// time after now.
	SkipAll
)

func (m MissedRuns) String() string {
	switch m {
	case RunOnce:
		return "run-once"
	case SkipAll:
		return "skip-all"
	}
	return fmt.Sprintf("missed-runs(%d)", int(m))
}

// Limits on a schedule.
const (
	// MaxNameLen leaves room for the "cron:" prefix of the unique key
	// (quick.MaxUniqueKeyLen bytes).
	MaxNameLen = 256
	// envelopeOverhead is what an occurrence's payload adds to the
	// schedule's besides the name: a few fixed fields.
	envelopeOverhead = 40
)

// definition is a validated schedule as stored, with its generation: a
// random number drawn whenever the schedule is created or changed. It goes
// into occurrence IDs, so the occurrences of a re-registered or recreated
// schedule never share an ID (and so an enqueue marker) with the cancelled
// occurrences of an earlier version.
type definition struct {
	Schedule
	Gen uint64
	// PrevTaskType is the task type before the last change of TaskType
	// (empty if none): an occurrence may still run under it, holding the
	// schedule's unique key of that type, and no other may start meanwhile.
	PrevTaskType string
}

// validate checks s and parses its spec, so that nothing is written for a
// schedule that could not run. It returns s normalized.
func validate(s Schedule, now time.Time) (Schedule, plan, error) {
	bad := func(format string, args ...any) (Schedule, plan, error) {
		return s, plan{}, fmt.Errorf("%w: %s", ErrInvalidSchedule, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Name == "":
		return bad("empty name")
	case len(s.Name) > MaxNameLen:
		return bad("name of %d bytes, over %d", len(s.Name), MaxNameLen)
	case !utf8.ValidString(s.Name):
		return bad("name %q is not UTF-8", s.Name)
	case s.TaskType == "":
		return bad("schedule %q: empty task type", s.Name)
	case len(s.TaskType) > quick.MaxTaskTypeLen:
		return bad("schedule %q: task type of %d bytes, over %d", s.Name, len(s.TaskType), quick.MaxTaskTypeLen)
	case s.MaxAttempts < 0:
		return bad("schedule %q: negative MaxAttempts %d", s.Name, s.MaxAttempts)
	case s.MissedRuns != RunOnce && s.MissedRuns != SkipAll:
		return bad("schedule %q: unknown MissedRuns %d", s.Name, int(s.MissedRuns))
	case len(s.Payload)+len(s.Name)+envelopeOverhead > quick.MaxPayloadSize:
		return s, plan{}, fmt.Errorf("%w: schedule %q: payload of %d bytes: %w", ErrInvalidSchedule, s.Name, len(s.Payload), quick.ErrPayloadTooLarge)
	}
	switch s.Priority {
	case 0:
		s.Priority = quick.Normal
	case quick.High, quick.Normal, quick.Low:
	default:
		return bad("schedule %q: priority %d (want High, Normal or Low)", s.Name, int64(s.Priority))
	}
	s.Spec = strings.TrimSpace(s.Spec)
	p, err := parseSpec(s.Spec, s.TimeZone, now)
	if err != nil {
		return s, plan{}, fmt.Errorf("schedule %q: %w", s.Name, err)
	}
	return s, p, nil
}

// sameConfig reports whether two normalized schedules are the same, so that
// registering an unchanged schedule writes nothing.
func sameConfig(a, b Schedule) bool {
	return a.Name == b.Name && a.Spec == b.Spec && a.TimeZone == b.TimeZone && a.TaskType == b.TaskType &&
		string(a.Payload) == string(b.Payload) && a.Priority == b.Priority && a.MaxAttempts == b.MaxAttempts &&
		a.MissedRuns == b.MissedRuns
}

// plan parses a stored definition's spec.
func (d definition) plan(now time.Time) (plan, error) {
	return parseSpec(d.Spec, d.TimeZone, now)
}
