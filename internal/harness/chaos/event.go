package chaos

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/quickfdb/quickfdb/quick"
)

// EvKind names what a worker reports on its standard output.
type EvKind string

// The events, one line each (Event.String).
const (
	EvReady EvKind = "ready" // the worker runs its handlers
	EvStart EvKind = "start" // a handler run began under the lease Token, Attempt (Short: a short-job hand-out)
	EvEnd   EvKind = "end"   // that run ended; Note says how (outcome)
	EvErrs  EvKind = "errs"  // the worker's FDB errors retried so far, by code (Note: code:n,...)
	EvExit  EvKind = "exit"  // the worker stopped; Note: its errors, as EvErrs
)

// Event is one line of a worker's report.
type Event struct {
	Kind    EvKind
	Worker  string
	Job     quick.ID
	Token   uint64
	Attempt int
	Short   bool
	At      int64 // unix ns
	Note    string
}

const evPrefix = "CH"

// String is the event's line: CH kind worker job token attempt short at note.
func (e Event) String() string {
	s := 0
	if e.Short {
		s = 1
	}
	note := e.Note
	if note == "" {
		note = "-"
	}
	return fmt.Sprintf("%s %s %s %s %d %d %d %d %s", evPrefix, e.Kind, e.Worker, e.Job, e.Token, e.Attempt, s, e.At, note)
}

// ErrNotEvent is returned by ParseEvent for a line that is no event.
var ErrNotEvent = errors.New("chaos: not an event line")

// ParseEvent reads a line written by Event.String.
func ParseEvent(line string) (Event, error) {
	f := strings.Fields(line)
	if len(f) != 9 || f[0] != evPrefix {
		return Event{}, fmt.Errorf("%w: %q", ErrNotEvent, line)
	}
	e := Event{Kind: EvKind(f[1]), Worker: f[2], Note: f[8]}
	switch e.Kind {
	case EvReady, EvStart, EvEnd, EvErrs, EvExit:
	default:
		return Event{}, fmt.Errorf("%w: unknown kind %q", ErrNotEvent, f[1])
	}
	if e.Note == "-" {
		e.Note = ""
	}
	var errs []error
	var err error
	if e.Job, err = quick.ParseID(f[3]); err != nil {
		errs = append(errs, err)
	}
	if e.Token, err = strconv.ParseUint(f[4], 10, 64); err != nil {
		errs = append(errs, err)
	}
	if e.Attempt, err = strconv.Atoi(f[5]); err != nil {
		errs = append(errs, err)
	}
	switch f[6] {
	case "0":
	case "1":
		e.Short = true
	default:
		errs = append(errs, fmt.Errorf("short %q", f[6]))
	}
	if e.At, err = strconv.ParseInt(f[7], 10, 64); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return Event{}, fmt.Errorf("%w: %q: %w", ErrNotEvent, line, err)
	}
	return e, nil
}

// FormatCodes renders error counts as code:n,code:n (sorted by code).
func FormatCodes(m map[int]int64) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d:%d", c, m[c]))
	}
	return strings.Join(parts, ",")
}

// ParseCodes reads FormatCodes's text.
func ParseCodes(s string) (map[int]int64, error) {
	out := map[int]int64{}
	if s == "" {
		return out, nil
	}
	for _, p := range strings.Split(s, ",") {
		c, n, ok := strings.Cut(p, ":")
		code, err1 := strconv.Atoi(c)
		count, err2 := strconv.ParseInt(n, 10, 64)
		if !ok || err1 != nil || err2 != nil || count < 0 {
			return nil, fmt.Errorf("chaos: error counts %q: bad part %q", s, p)
		}
		out[code] += count
	}
	return out, nil
}

// lineWriter writes whole event lines, one goroutine at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) emit(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, e.String())
}
