package soak

import (
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// Job kinds, by what their handler does.
const (
	KindNormal    = "normal"    // completes
	KindTransient = "transient" // fails its first attempt, then completes
	KindPoison    = "poison"    // always fails: must end dead-lettered
	KindCron      = "cron"      // a cron occurrence: completes and schedules its successor
)

// JobRec is a work job a producer enqueued.
type JobRec struct {
	ID       quick.ID
	Kind     string
	Producer int
	Seq      int
	// Uncertain is set when the enqueue call failed, so the job may or may
	// not exist; it must then be finished if it exists at all.
	Uncertain bool
}

// ClaimRec is a lease a worker received.
type ClaimRec struct {
	ID      quick.ID
	Token   uint64
	Attempt int
	Worker  string
}

// RunRec is one run of a handler.
type RunRec struct {
	ID         quick.ID
	Token      uint64
	Worker     string
	Start, End time.Time
	Schedule   string // cron occurrences: the schedule's name
}

// CompletionRec is a committed completion, read back from the history
// records the completing transactions wrote.
type CompletionRec struct {
	ID      quick.ID
	Token   uint64
	Worker  string
	Attempt int
	// Schedule and ScheduledAt identify a cron occurrence (Schedule is
	// empty for work jobs).
	Schedule    string
	ScheduledAt time.Time
}

// CronEntry is where a cron chain stands at the end (from cron.List).
type CronEntry struct {
	Name   string
	Alive  bool
	Next   time.Time
	NextID quick.ID
}

// History is everything the checker looks at.
type History struct {
	Jobs        []JobRec
	Claims      []ClaimRec
	Runs        []RunRec
	Completions []CompletionRec
	// Dead and Pending are the work jobs in the dead letters and still
	// queued (scheduled, ready or leased) at the end.
	Dead    []quick.ID
	Pending []quick.ID
	// CronPending and CronDead are the cron occurrences still queued and
	// dead-lettered at the end; CronEntries the chains.
	CronPending []quick.ID
	CronDead    []quick.ID
	CronEntries []CronEntry
}

// recorder collects the in-memory part of the history from many goroutines.
type recorder struct {
	mu     sync.Mutex
	jobs   []JobRec
	claims []ClaimRec
	runs   []RunRec
}

func (r *recorder) job(j JobRec) {
	r.mu.Lock()
	r.jobs = append(r.jobs, j)
	r.mu.Unlock()
}

func (r *recorder) claim(c ClaimRec) {
	r.mu.Lock()
	r.claims = append(r.claims, c)
	r.mu.Unlock()
}

func (r *recorder) run(x RunRec) {
	r.mu.Lock()
	r.runs = append(r.runs, x)
	r.mu.Unlock()
}
