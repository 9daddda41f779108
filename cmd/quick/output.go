package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/quick"
)

// format is an output format.
type format int

const (
	formatTable format = iota
	formatJSON
)

func outputFormat(c *cli.Context) (format, error) {
	s := globalString(c, flagOutput)
	switch strings.ToLower(s) {
	case "", "table", "text":
		return formatTable, nil
	case "json":
		return formatJSON, nil
	default:
		return 0, fmt.Errorf("invalid --output %q (want table or json)", s)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// row writes tab-separated cells and a newline.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	io.WriteString(w, "\n")
}

// fmtRel renders t relative to now: "in 5s" or "3m02s ago".
func fmtRel(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if t.After(now) {
		return "in " + present.Age(t.Sub(now))
	}
	return present.Age(now.Sub(t)) + " ago"
}

// fmtTime renders an absolute time in UTC with milliseconds.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// fmtCount renders a count, as a lower bound when it is not exact.
func fmtCount(n int, exact bool) string {
	if exact {
		return strconv.Itoa(n)
	}
	return "≥" + strconv.Itoa(n)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens s to n runes on one line, for table cells.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func prioString(p quick.Priority) string {
	if p == 0 {
		return ""
	}
	return p.String()
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// jobJSON is a job in JSON output. Payloads that are valid text come as
// payload, others as payload_base64.
type jobJSON struct {
	ID            string     `json:"id"`
	TaskType      string     `json:"task_type,omitempty"`
	Priority      string     `json:"priority,omitempty"`
	State         string     `json:"state"`
	Lane          *int       `json:"lane,omitempty"`
	RunAt         *time.Time `json:"run_at,omitempty"`
	Attempt       int        `json:"attempt"`
	MaxAttempts   int        `json:"max_attempts,omitempty"`
	Holder        string     `json:"holder,omitempty"`
	CreatedAt     *time.Time `json:"created_at,omitempty"`
	DeadAt        *time.Time `json:"dead_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	UniqueKey     string     `json:"unique_key,omitempty"`
	ItemSpace     string     `json:"item_space,omitempty"`
	HasCheckpoint bool       `json:"has_checkpoint,omitempty"`
	// A retained finished job's times and its last attempts' errors.
	StartedAt     *time.Time         `json:"started_at,omitempty"`
	FinishedAt    *time.Time         `json:"finished_at,omitempty"`
	ExpiresAt     *time.Time         `json:"expires_at,omitempty"`
	Errors        []attemptErrorJSON `json:"errors,omitempty"`
	PayloadBytes  *int               `json:"payload_bytes,omitempty"`
	Payload       *string            `json:"payload,omitempty"`
	PayloadBase64 []byte             `json:"payload_base64,omitempty"`
}

// attemptErrorJSON is one failed attempt of a retained job.
type attemptErrorJSON struct {
	Attempt int        `json:"attempt"`
	At      *time.Time `json:"at,omitempty"`
	Error   string     `json:"error"`
}

func toJobJSON(j quick.JobInfo, withPayload bool) jobJSON {
	out := jobJSON{
		ID: j.ID.String(), TaskType: j.TaskType, Priority: prioString(j.Priority), State: j.State.String(),
		RunAt: timePtr(j.RunAt), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Holder: j.Holder,
		CreatedAt: timePtr(j.CreatedAt), DeadAt: timePtr(j.DeadAt), LastError: j.LastError,
		UniqueKey: j.UniqueKey, ItemSpace: j.ItemSpace, HasCheckpoint: j.HasCheckpoint,
		StartedAt: timePtr(j.StartedAt), FinishedAt: timePtr(j.FinishedAt), ExpiresAt: timePtr(j.ExpiresAt),
	}
	for _, e := range j.Errors {
		out.Errors = append(out.Errors, attemptErrorJSON{Attempt: e.Attempt, At: timePtr(e.At), Error: e.Error})
	}
	switch j.State {
	case quick.StateScheduled, quick.StateReady, quick.StateLeased:
		lane := j.Lane
		out.Lane = &lane
	}
	if withPayload && j.State != quick.StateFinished {
		n := len(j.Payload)
		out.PayloadBytes = &n
		if present.IsText(j.Payload) {
			s := string(j.Payload)
			out.Payload = &s
		} else {
			out.PayloadBase64 = j.Payload
		}
	}
	return out
}
