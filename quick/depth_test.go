package quick_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// TestDepthPerTaskTypeAndTenant: on a zones queue with four tenants, Depth
// counts ready, leased, scheduled and dead jobs in all and per tenant,
// ranks the tenants by ready work, and says the counts are exact.
func TestDepthPerTaskTypeAndTenant(t *testing.T) {
	e := newTenantEnv(t, quick.Options{})
	// A busier tenant, older work, and a dead letter.
	e.clk.Advance(time.Second)
	var more []quick.NewJob
	for range 5 {
		more = append(more, quick.NewJob{TaskType: "email", ItemSpace: "globex"})
	}
	e.enqueue(t, more...)
	e.enqueue(t, quick.NewJob{TaskType: "sms", ItemSpace: "acme"})
	dl := e.leased[0]
	if err := e.q.DeadLetter(e.ctx, dl, "boom"); err != nil {
		t.Fatal(err)
	}
	d, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email"})
	if err != nil {
		t.Fatal(err)
	}
	if d.TaskType != "email" || d.Ready != 31 || d.Leased != 1 || d.Scheduled != 12 || d.Dead != 1 || !d.Exact || !d.TenantsExact {
		t.Fatalf("depth %+v, want 31 ready, 1 leased, 12 scheduled, 1 dead, exact", d)
	}
	if !d.OldestReady.Equal(epoch) {
		t.Errorf("oldest ready %v, want %v", d.OldestReady, epoch)
	}
	if len(d.Tenants) != 4 || d.Tenants[0].ItemSpace != "globex" || d.Tenants[0].Ready != 12-countLeased(e, "globex") {
		t.Fatalf("tenants %+v: want 4, globex first", d.Tenants)
	}
	sum := 0
	for _, td := range d.Tenants {
		sum += td.Ready + td.Leased + td.Scheduled
		if !td.Exact || td.Lanes == 0 || td.Scheduled != 3 {
			t.Errorf("tenant %+v: want exact, lanes counted, 3 scheduled", td)
		}
	}
	if sum != 44 {
		t.Errorf("tenants sum to %d jobs, want 44", sum)
	}
	// The top tenant only: the list is then not every tenant.
	d1, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email", TopTenants: 1})
	if err != nil || len(d1.Tenants) != 1 || d1.Tenants[0].ItemSpace != "globex" || d1.TenantsExact || !d1.Exact {
		t.Fatalf("top 1: %+v %v", d1, err)
	}
	// Named tenants: only theirs.
	dn, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email", ItemSpaces: []string{"", "initech"}})
	want := 20
	if dl.ItemSpace == "" || dl.ItemSpace == "initech" {
		want--
	}
	if err != nil || dn.Ready+dn.Leased+dn.Scheduled != want || len(dn.Tenants) != 2 || !dn.Exact {
		t.Fatalf("named tenants: %+v %v", dn, err)
	}
	if _, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email", ItemSpaces: make([]string, 1001)}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("1,001 item spaces: %v", err)
	}
}

// countLeased is how many of a tenant's ready jobs were claimed.
func countLeased(e *tenantEnv, itemSpace string) int {
	n := 0
	for _, l := range e.leased { // leased[0] was dead-lettered: gone too
		if l.ItemSpace == itemSpace {
			n++
		}
	}
	return n
}

// TestDepthIsBoundedByItsBudget: with many tenants and a small budget,
// Depth reads at most its budget, says its counts are lower bounds, and
// still counts the lanes whose work is oldest first.
func TestDepthIsBoundedByItsBudget(t *testing.T) {
	e := newEnv(t, quick.Options{ZoneLanes: 1})
	e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: "oldest"})
	e.clk.Advance(2 * time.Second)
	var jobs []quick.NewJob
	for i := range 400 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprint("t", i%40)})
	}
	e.enqueue(t, jobs...)
	before := e.db.Stats()
	d, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email", Budget: 100})
	if err != nil {
		t.Fatal(err)
	}
	if read := e.db.Stats().Sub(before).KeysRead; read > 100+1 { // +1: the dead-letter counter
		t.Fatalf("Depth read %d keys, budget 100", read)
	}
	if d.Exact || d.TenantsExact || d.Ready == 0 || d.Ready > 100 {
		t.Fatalf("budget 100: %+v, want inexact lower bounds", d)
	}
	if !d.OldestReady.Equal(epoch) || d.Tenants[0].Exact {
		t.Fatalf("budget 100: oldest %v (want the first tenant's %v), tenants %+v", d.OldestReady, epoch, d.Tenants)
	}
	full, err := e.q.Depth(e.ctx, quick.DepthOptions{TaskType: "email"})
	if err != nil || full.Ready != 401 || !full.Exact || len(full.Tenants) != 20 || full.TenantsExact {
		t.Fatalf("default budget: %+v %v; want 401 ready, exact, the top 20 of 41 tenants", full, err)
	}
}
