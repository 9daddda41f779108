package quicktest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// MaxJobs is the most live jobs of one kind an assertion reads. A test
// that enqueued more fails with a message saying so, rather than asserting
// on a partial view.
const MaxJobs = 1000

// DefaultScheduledDelta is the tolerance of RequireOpts.ScheduledAt when
// ScheduledDelta is zero.
const DefaultScheduledDelta = time.Second

// RequireOpts are the options a matching job must also have. A zero field
// is not checked.
type RequireOpts struct {
	// AnyArgs matches a job of the kind whatever its arguments.
	AnyArgs bool
	// Priority the job must have.
	Priority quick.Priority
	// ItemSpace (queue or tenant) the job must be in.
	ItemSpace string
	// MaxAttempts the job must have.
	MaxAttempts int
	// UniqueKey the job must hold.
	UniqueKey string
	// ScheduledAt is when the job must vest, within ScheduledDelta
	// (default DefaultScheduledDelta). A leased job's vesting time is its
	// lease deadline.
	ScheduledAt    time.Time
	ScheduledDelta time.Duration
	// State the job must be in (scheduled, ready or leased).
	State quick.State
}

// ExpectedJob is one job RequireManyEnqueued expects.
type ExpectedJob struct {
	Args quick.JobArgs
	Opts *RequireOpts
}

// RequireEnqueued asserts that q holds a live job of expected's kind whose
// arguments equal expected and whose options match opts (nil checks none),
// and returns the first such job. It reads in its own transaction.
func RequireEnqueued[T quick.JobArgs](tb TB, q *quick.Queue, expected T, opts *RequireOpts) *quick.JobInfo {
	tb.Helper()
	jobs := readJobs(tb, q, nil, expected.Kind())
	return requireOne(tb, jobs, expected, opts)
}

// RequireEnqueuedTx is RequireEnqueued inside the caller's transaction: it
// sees the transaction's own uncommitted writes, so a test can assert what
// its code enqueued before committing. Its reads are snapshot reads and add
// no conflicts. tr may be a kv.Transaction.
func RequireEnqueuedTx[T quick.JobArgs](tb TB, tr kv.ReadTransaction, q *quick.Queue, expected T, opts *RequireOpts) *quick.JobInfo {
	tb.Helper()
	jobs := readJobs(tb, q, tr, expected.Kind())
	return requireOne(tb, jobs, expected, opts)
}

// RequireNotEnqueued asserts that q holds no live job of expected's kind
// whose arguments equal expected and whose options match opts. With
// opts.AnyArgs it asserts that no live job of the kind matches opts at all.
func RequireNotEnqueued[T quick.JobArgs](tb TB, q *quick.Queue, expected T, opts *RequireOpts) {
	tb.Helper()
	requireNone(tb, readJobs(tb, q, nil, expected.Kind()), expected, opts)
}

// RequireNotEnqueuedTx is RequireNotEnqueued inside the caller's transaction.
func RequireNotEnqueuedTx[T quick.JobArgs](tb TB, tr kv.ReadTransaction, q *quick.Queue, expected T, opts *RequireOpts) {
	tb.Helper()
	requireNone(tb, readJobs(tb, q, tr, expected.Kind()), expected, opts)
}

// RequireManyEnqueued asserts that every expected job is matched by a
// distinct live job (in any order) and returns the matches in the order of
// expected. Jobs beyond those expected are allowed.
func RequireManyEnqueued(tb TB, q *quick.Queue, expected []ExpectedJob) []*quick.JobInfo {
	tb.Helper()
	byKind := map[string][]quick.JobInfo{}
	used := map[quick.ID]bool{}
	out := make([]*quick.JobInfo, len(expected))
	for i, e := range expected {
		kind := e.Args.Kind()
		if _, ok := byKind[kind]; !ok {
			byKind[kind] = readJobs(tb, q, nil, kind)
		}
		want, err := canonical(e.Args)
		if err != nil {
			tb.Fatalf("quicktest: expected job %d: %v", i, err)
			return nil
		}
		for j := range byKind[kind] {
			job := &byKind[kind][j]
			if !used[job.ID] && len(mismatches(job, want, e.Opts)) == 0 {
				used[job.ID], out[i] = true, job
				break
			}
		}
		if out[i] == nil {
			tb.Fatalf("quicktest: expected job %d: no unmatched live job of kind %q with args %s%s\n%s",
				i, kind, show(want), describeOpts(e.Opts), listing(kind, byKind[kind], false))
			return nil
		}
	}
	return out
}

func readJobs(tb TB, q *quick.Queue, tr kv.ReadTransaction, kind string) []quick.JobInfo {
	tb.Helper()
	list, ok := testhook.JobsTx.(func(kv.ReadTransaction, *quick.Queue, string, int) ([]quick.JobInfo, bool, error))
	if !ok {
		tb.Fatalf("quicktest: the quick package does not provide its job listing (internal/testhook)")
		return nil
	}
	var (
		jobs []quick.JobInfo
		more bool
		err  error
	)
	if tr != nil {
		jobs, more, err = list(tr, q, kind, MaxJobs)
	} else {
		err = q.DB().ReadTransact(tb.Context(), func(rt kv.ReadTransaction) error {
			jobs, more, err = list(rt, q, kind, MaxJobs)
			return err
		})
	}
	if err != nil {
		tb.Fatalf("quicktest: list jobs of kind %q: %v", kind, err)
		return nil
	}
	if more {
		tb.Fatalf("quicktest: more than %d live jobs of kind %q: assertions read at most %d", MaxJobs, kind, MaxJobs)
		return nil
	}
	return jobs
}

func requireOne(tb TB, jobs []quick.JobInfo, expected quick.JobArgs, opts *RequireOpts) *quick.JobInfo {
	tb.Helper()
	kind := expected.Kind()
	want, err := canonical(expected)
	if err != nil {
		tb.Fatalf("quicktest: %v", err)
		return nil
	}
	var near []string
	for i := range jobs {
		m := mismatches(&jobs[i], want, opts)
		if len(m) == 0 {
			return &jobs[i]
		}
		if argsMatch(&jobs[i], want, opts) {
			near = append(near, fmt.Sprintf("job %s has the args but %s", jobs[i].ID, strings.Join(m, ", ")))
		}
	}
	what := "args " + show(want)
	if opts != nil && opts.AnyArgs {
		what = "any args"
	}
	msg := fmt.Sprintf("quicktest: no live job of kind %q with %s%s", kind, what, describeOpts(opts))
	if len(near) > 0 {
		msg += "\n" + strings.Join(near, "\n")
	}
	tb.Fatalf("%s\n%s", msg, listing(kind, jobs, false))
	return nil
}

func requireNone(tb TB, jobs []quick.JobInfo, expected quick.JobArgs, opts *RequireOpts) {
	tb.Helper()
	want, err := canonical(expected)
	if err != nil {
		tb.Fatalf("quicktest: %v", err)
		return
	}
	var found []quick.JobInfo
	for i := range jobs {
		if len(mismatches(&jobs[i], want, opts)) == 0 {
			found = append(found, jobs[i])
		}
	}
	if len(found) > 0 {
		what := "args " + show(want)
		if opts != nil && opts.AnyArgs {
			what = "any args"
		}
		tb.Fatalf("quicktest: want no live job of kind %q with %s%s; found %d\n%s",
			expected.Kind(), what, describeOpts(opts), len(found), listing(expected.Kind(), found, true))
	}
}

// canonical is the JSON value an insert of args stores, decoded.
func canonical(args quick.JobArgs) (any, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode %s args: %w", args.Kind(), err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode %s args: %w", args.Kind(), err)
	}
	return v, nil
}

func argsMatch(job *quick.JobInfo, want any, opts *RequireOpts) bool {
	if opts != nil && opts.AnyArgs {
		return true
	}
	var got any
	if err := json.Unmarshal(job.Payload, &got); err != nil {
		return false
	}
	return reflect.DeepEqual(got, want)
}

// mismatches lists how job differs from the expectation; empty when it
// matches.
func mismatches(job *quick.JobInfo, want any, opts *RequireOpts) []string {
	var m []string
	if !argsMatch(job, want, opts) {
		m = append(m, "args differ")
	}
	if opts == nil {
		return m
	}
	if opts.Priority != 0 && job.Priority != opts.Priority {
		m = append(m, fmt.Sprintf("priority is %v, want %v", job.Priority, opts.Priority))
	}
	if opts.ItemSpace != "" && job.ItemSpace != opts.ItemSpace {
		m = append(m, fmt.Sprintf("item space is %q, want %q", job.ItemSpace, opts.ItemSpace))
	}
	if opts.MaxAttempts != 0 && job.MaxAttempts != opts.MaxAttempts {
		m = append(m, fmt.Sprintf("max attempts is %d, want %d", job.MaxAttempts, opts.MaxAttempts))
	}
	if opts.UniqueKey != "" && job.UniqueKey != opts.UniqueKey {
		m = append(m, fmt.Sprintf("unique key is %q, want %q", job.UniqueKey, opts.UniqueKey))
	}
	if opts.State != 0 && job.State != opts.State {
		m = append(m, fmt.Sprintf("state is %v, want %v", job.State, opts.State))
	}
	if !opts.ScheduledAt.IsZero() {
		d := opts.ScheduledDelta
		if d <= 0 {
			d = DefaultScheduledDelta
		}
		if off := job.RunAt.Sub(opts.ScheduledAt); off > d || off < -d {
			m = append(m, fmt.Sprintf("scheduled at %s, want %s ± %v", stamp(job.RunAt), stamp(opts.ScheduledAt), d))
		}
	}
	return m
}

func describeOpts(o *RequireOpts) string {
	if o == nil {
		return ""
	}
	var parts []string
	if o.Priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %v", o.Priority))
	}
	if o.ItemSpace != "" {
		parts = append(parts, fmt.Sprintf("item space %q", o.ItemSpace))
	}
	if o.MaxAttempts != 0 {
		parts = append(parts, fmt.Sprintf("max attempts %d", o.MaxAttempts))
	}
	if o.UniqueKey != "" {
		parts = append(parts, fmt.Sprintf("unique key %q", o.UniqueKey))
	}
	if o.State != 0 {
		parts = append(parts, fmt.Sprintf("state %v", o.State))
	}
	if !o.ScheduledAt.IsZero() {
		d := o.ScheduledDelta
		if d <= 0 {
			d = DefaultScheduledDelta
		}
		parts = append(parts, fmt.Sprintf("scheduled at %s ± %v", stamp(o.ScheduledAt), d))
	}
	if len(parts) == 0 {
		return ""
	}
	return " and " + strings.Join(parts, ", ")
}

// listing shows jobs, one a line, with their args and options.
func listing(kind string, jobs []quick.JobInfo, matched bool) string {
	if len(jobs) == 0 {
		return fmt.Sprintf("no live jobs of kind %q are enqueued", kind)
	}
	var b strings.Builder
	if matched {
		fmt.Fprintf(&b, "matching jobs:")
	} else {
		fmt.Fprintf(&b, "live jobs of kind %q (%d):", kind, len(jobs))
	}
	for i, j := range jobs {
		fmt.Fprintf(&b, "\n  %d. id=%s args=%s priority=%v item_space=%q max_attempts=%d unique_key=%q scheduled_at=%s state=%v",
			i+1, j.ID, payloadText(j.Payload), j.Priority, j.ItemSpace, j.MaxAttempts, j.UniqueKey, stamp(j.RunAt), j.State)
	}
	return b.String()
}

func payloadText(p []byte) string {
	var v any
	if err := json.Unmarshal(p, &v); err != nil {
		return fmt.Sprintf("%q (not JSON)", p)
	}
	return show(v)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
