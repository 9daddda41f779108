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
	KindLarge     = "large"     // completes; its payload is up to Config.LargeBytes
	// KindExhaust has one attempt and freezes its worker past the lease: it
	// ends dead-lettered by the claim that finds its attempt spent, or, if
	// no claim came before the frozen worker woke, completed by it.
	KindExhaust = "exhaust"
	// KindCheckpoint checkpoints and fails on the run that finds no
	// checkpoint, and completes on the run that resumes from it: it must
	// end completed by a run that saw its checkpoint.
	KindCheckpoint = "checkpoint"
	// KindRequeue has one attempt and fails until the harness has requeued
	// it from the dead letters: it must end completed.
	KindRequeue = "requeue"
	// KindSlow runs for Config.SlowFor, longer than a short-job lane lease.
	KindSlow = "slow"
)

// JobRec is a work job a producer enqueued.
type JobRec struct {
	ID       quick.ID
	Kind     string
	Producer int
	Seq      int
	TaskType string
	Tenant   string
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
	// Epoch is how many times the job had been requeued from the dead
	// letters when it was claimed: a requeue starts its attempts again. It
	// is the epoch at the claim (Claimed), not at the handler's start,
	// which may follow a requeue that the lease came before.
	Epoch int
	// Claimed is when the worker claimed the job and At when the handler
	// started (real time; a prefetched job starts once a slot frees).
	Claimed, At time.Time
	// Short is set for a job handed out in short-job mode (under its lane
	// lease, its attempt not counted), not claimed with a lease of its own.
	Short bool
}

// RunRec is one run of a handler.
type RunRec struct {
	ID         quick.ID
	Token      uint64
	Worker     string
	Start, End time.Time
	Schedule   string // cron occurrences: the schedule's name
	Err        string // what the handler returned, for the reports
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
	// CronInfo describes each pending cron occurrence (task type, state,
	// attempt, holder, unique key, run time), for the violations' text.
	CronInfo map[quick.ID]string
	// CronEdited names the chains edited (spec, task type, or removed and
	// registered again) during the run: a pending occurrence an edit
	// cancelled may have started its handler already, and that run is
	// abandoned, not lost.
	CronEdited map[string]bool
	// CronRecreated names the chains removed and registered again: a new
	// schedule under the old name, whose times may repeat ones the old
	// one ran (its first is the next after Register's clock, and a worker
	// whose clock ran ahead may have run that time already). The checks
	// of time order and of times completed twice skip them; the checks of
	// one pending occurrence per chain still hold.
	CronRecreated map[string]bool
	// TooLarge counts commits that failed with 2101 transaction_too_large.
	TooLarge int64
	// IndexLeft lists the jobs whose zones lookup index entries are left
	// at the end, when every job is finished.
	IndexLeft []quick.ID
	// HandlerProblems are violations the handlers saw as they ran (a
	// checkpoint resumed with other bytes than it stored).
	HandlerProblems []string
}

// recorder collects the in-memory part of the history from many goroutines.
type recorder struct {
	mu       sync.Mutex
	jobs     []JobRec
	kinds    map[quick.ID]string
	claims   []ClaimRec
	runs     []RunRec
	problems []string
}

func (r *recorder) job(j JobRec) {
	r.mu.Lock()
	r.jobs = append(r.jobs, j)
	if r.kinds == nil {
		r.kinds = map[quick.ID]string{}
	}
	r.kinds[j.ID] = j.Kind
	r.mu.Unlock()
}

func (r *recorder) problem(s string) {
	r.mu.Lock()
	r.problems = append(r.problems, s)
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
