package quick_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// tenantEnv is a zones queue holding, for each of four tenants (the
// no-tenant zone among them), 7 ready and 3 scheduled "email" jobs, with
// lease holders on 2 of them.
type tenantEnv struct {
	*env
	tenants []string
	byID    map[quick.ID]string // tenant of each job
	leased  []quick.Lease
}

var testTenants = []string{"", "acme", "globex", "initech"}

func newTenantEnv(t *testing.T, opts quick.Options) *tenantEnv {
	t.Helper()
	if opts.ZoneLanes == 0 {
		opts.ZoneLanes = 4
	}
	e := &tenantEnv{env: newEnv(t, opts), tenants: testTenants, byID: map[quick.ID]string{}}
	var jobs []quick.NewJob
	for _, ts := range e.tenants {
		for i := range 10 {
			j := quick.NewJob{TaskType: "email", ItemSpace: ts, Payload: []byte(fmt.Sprint(i))}
			if i >= 7 {
				j.Delay = time.Hour
			}
			jobs = append(jobs, j)
		}
	}
	for i, r := range e.enqueue(t, jobs...) {
		e.byID[r.ID] = jobs[i].ItemSpace
	}
	e.leased = e.claimZones(t, "w1", 2)
	return e
}

// claimZones claims n jobs of "email" from the zones, lane after lane (a
// claim takes one lane's vested jobs).
func (e *env) claimZones(t testing.TB, holder string, n int) []quick.Lease {
	t.Helper()
	var out []quick.Lease
	for range 100 {
		if len(out) == n {
			return out
		}
		res, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: holder, Max: n - len(out), Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Jobs...)
	}
	t.Fatalf("claimed %d jobs, want %d", len(out), n)
	return nil
}

// listAll pages through List and fails on a job seen twice.
func (e *tenantEnv) listAll(t *testing.T, o quick.ListOptions) []quick.JobInfo {
	t.Helper()
	seen := map[quick.ID]bool{}
	var out []quick.JobInfo
	for calls := 0; ; calls++ {
		if calls > 1000 {
			t.Fatal("List does not end")
		}
		p, err := e.q.List(e.ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			if seen[j.ID] {
				t.Fatalf("job %s listed twice", j.ID)
			}
			seen[j.ID] = true
			out = append(out, j)
		}
		if p.Next == "" {
			return out
		}
		o.After = p.Next
	}
}

func countStates(jobs []quick.JobInfo) map[quick.State]int {
	m := map[quick.State]int{}
	for _, j := range jobs {
		m[j.State]++
	}
	return m
}

// TestListAcrossTenantsPagesEveryJobOnce: List walks every tenant's zone
// (through the pointer index, or the named tenants), filters by state and
// tenant, and pages with a cursor, each job once.
func TestListAcrossTenantsPagesEveryJobOnce(t *testing.T) {
	e := newTenantEnv(t, quick.Options{})
	for _, limit := range []int{1, 3, 100} {
		all := e.listAll(t, quick.ListOptions{TaskType: "email", Limit: limit})
		if len(all) != 40 {
			t.Fatalf("limit %d: listed %d jobs, want 40", limit, len(all))
		}
		st := countStates(all)
		if st[quick.StateReady] != 26 || st[quick.StateLeased] != 2 || st[quick.StateScheduled] != 12 {
			t.Fatalf("limit %d: states %v, want 26 ready, 2 leased, 12 scheduled", limit, st)
		}
		for _, j := range all {
			if e.byID[j.ID] != j.ItemSpace || j.TaskType != "email" {
				t.Fatalf("job %s listed in tenant %q of %q, enqueued in %q", j.ID, j.ItemSpace, j.TaskType, e.byID[j.ID])
			}
		}
	}
	leased := e.listAll(t, quick.ListOptions{TaskType: "email", State: quick.StateLeased})
	if len(leased) != 2 || leased[0].Holder != "w1" {
		t.Fatalf("leased: %+v", leased)
	}
	ready := e.listAll(t, quick.ListOptions{TaskType: "email", State: quick.StateReady, Limit: 5})
	if len(ready) != 26 {
		t.Fatalf("ready: %d, want 26", len(ready))
	}
	for _, sel := range [][]string{{"acme"}, {"", "globex"}, {"initech", "acme", "acme"}, {"nobody"}} {
		want := map[string]bool{}
		for _, s := range sel {
			if s != "nobody" {
				want[s] = true
			}
		}
		for _, limit := range []int{2, 100} {
			got := e.listAll(t, quick.ListOptions{TaskType: "email", ItemSpaces: sel, Limit: limit})
			if len(got) != 10*len(want) {
				t.Fatalf("tenants %q limit %d: %d jobs, want %d", sel, limit, len(got), 10*len(want))
			}
			for _, j := range got {
				if !want[j.ItemSpace] {
					t.Fatalf("tenants %q: listed a job of %q", sel, j.ItemSpace)
				}
			}
		}
		sched := e.listAll(t, quick.ListOptions{TaskType: "email", ItemSpaces: sel, State: quick.StateScheduled})
		if len(sched) != 3*len(want) {
			t.Fatalf("tenants %q: %d scheduled, want %d", sel, len(sched), 3*len(want))
		}
	}
	if p, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "sms"}); err != nil || len(p.Jobs) != 0 || p.Next != "" {
		t.Fatalf("another type: %+v %v", p, err)
	}
	if _, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", State: quick.StateDead}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("State dead: %v", err)
	}
}

// TestListIsBoundedByItsScanBudget: with a budget of 16 keys a call reads
// at most about that many keys, returns a cursor, and the pages together
// still list every job once.
func TestListIsBoundedByItsScanBudget(t *testing.T) {
	e := newTenantEnv(t, quick.Options{})
	for _, sel := range [][]string{nil, testTenants} {
		seen := map[quick.ID]bool{}
		o := quick.ListOptions{TaskType: "email", ItemSpaces: sel, State: quick.StateScheduled, Limit: 1000, ScanBudget: 16}
		calls := 0
		for {
			calls++
			before := e.db.Stats()
			p, err := e.q.List(e.ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if read := e.db.Stats().Sub(before).KeysRead; read > 16 {
				t.Fatalf("tenants %q: a call read %d keys, budget 16", sel, read)
			}
			for _, j := range p.Jobs {
				if seen[j.ID] || j.State != quick.StateScheduled {
					t.Fatalf("job %s twice or %s", j.ID, j.State)
				}
				seen[j.ID] = true
			}
			if p.Next == "" {
				break
			}
			o.After = p.Next
		}
		if len(seen) != 12 || calls < 3 {
			t.Fatalf("tenants %q: %d scheduled jobs in %d calls, want 12 in at least 3", sel, len(seen), calls)
		}
	}
}

// TestListRefusesAForeignCursor: a cursor is bound to its task type and to
// the kind of listing (every tenant, or named tenants).
func TestListRefusesAForeignCursor(t *testing.T) {
	e := newTenantEnv(t, quick.Options{})
	all, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", Limit: 1})
	if err != nil || all.Next == "" {
		t.Fatal(all, err)
	}
	named, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", ItemSpaces: []string{"acme"}, Limit: 1})
	if err != nil || named.Next == "" {
		t.Fatal(named, err)
	}
	dead, err := e.q.ListDead(e.ctx, quick.ListDeadOptions{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	_ = dead
	for name, o := range map[string]quick.ListOptions{
		"other type":        {TaskType: "sms", After: all.Next},
		"named for all":     {TaskType: "email", After: named.Next},
		"all for named":     {TaskType: "email", ItemSpaces: []string{"acme"}, After: all.Next},
		"garbage":           {TaskType: "email", After: "%%%"},
		"truncated":         {TaskType: "email", After: all.Next[:len(all.Next)-3]},
		"another version":   {TaskType: "email", After: "AgA"},
		"too long a cursor": {TaskType: "email", After: quick.Cursor(make([]byte, 20<<10))},
	} {
		if _, err := e.q.List(e.ctx, o); !errors.Is(err, quick.ErrInvalidCursor) {
			t.Errorf("%s: %v, want ErrInvalidCursor", name, err)
		}
	}
}

// FuzzListCursor: List with any cursor lists or refuses it with
// ErrInvalidCursor; it never panics.
func FuzzListCursor(f *testing.F) {
	f.Add("", false)
	f.Add("AUwFZW1haWwA", false)
	f.Add("AVQFZW1haWwEYWNtZQA", true)
	f.Add("AUwFZW1haWwCAQIAAWk", false)
	f.Fuzz(func(t *testing.T, c string, named bool) {
		e := newEnv(t, quick.Options{ZoneLanes: 2})
		e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: "acme"}, quick.NewJob{TaskType: "email"})
		o := quick.ListOptions{TaskType: "email", After: quick.Cursor(c), Limit: 1}
		if named {
			o.ItemSpaces = []string{"", "acme"}
		}
		_, err := e.q.List(e.ctx, o)
		if err != nil && !errors.Is(err, quick.ErrInvalidCursor) {
			t.Fatalf("List(%q): %v", c, err)
		}
	})
}
