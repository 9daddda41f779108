package quick_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

func zonesEnv(t testing.TB, opts quick.Options) *env {
	t.Helper()
	return newEnv(t, opts)
}

func (e *env) zclaim(t testing.TB, o quick.ClaimOptions) quick.Claimed {
	t.Helper()
	if o.TaskType == "" {
		o.TaskType = "email"
	}
	if o.Holder == "" {
		o.Holder = "w"
	}
	if o.Lease == 0 {
		o.Lease = time.Minute
	}
	res, err := e.q.Consumer().Claim(e.ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestZoneEnqueueClaimLapseReclaim(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	res := e.enqueue(t, quick.NewJob{TaskType: "email", Payload: []byte("hello"), ItemSpace: "acme"})
	if res[0].Duplicate || res[0].ID.IsZero() || !res[0].RunAt.Equal(epoch) {
		t.Fatalf("enqueue = %+v", res[0])
	}
	c := e.zclaim(t, quick.ClaimOptions{Max: 10})
	if len(c.Jobs) != 1 || c.More || c.Lane != nil {
		t.Fatalf("claim = %+v", c)
	}
	l := c.Jobs[0]
	if l.ID != res[0].ID || string(l.Payload) != "hello" || l.Attempt != 1 || l.Holder != "w" ||
		l.ItemSpace != "acme" || l.TaskType != "email" || l.Priority != quick.Normal ||
		!l.Deadline.Equal(epoch.Add(time.Minute)) || !l.CreatedAt.Equal(epoch) || !l.VestedAt.Equal(epoch) {
		t.Fatalf("lease %+v", l)
	}
	// Leased: nothing vested; the lane's pointer now vests at the deadline.
	again := e.zclaim(t, quick.ClaimOptions{})
	if len(again.Jobs) != 0 || !again.NextVest.Equal(l.Deadline) {
		t.Fatalf("second claim = %+v, want nothing until %v", again, l.Deadline)
	}
	// The lease lapses: the job runs again, its attempt counted.
	e.clk.Advance(time.Minute)
	c = e.zclaim(t, quick.ClaimOptions{Holder: "w2"})
	if len(c.Jobs) != 1 || c.Jobs[0].ID != l.ID || c.Jobs[0].Attempt != 2 || c.Jobs[0].Holder != "w2" ||
		!c.Jobs[0].VestedAt.Equal(l.Deadline) || string(c.Jobs[0].Payload) != "hello" {
		t.Fatalf("re-claim = %+v", c)
	}
}

func TestZoneClaimDeadLettersExhausted(t *testing.T) {
	e := zonesEnv(t, quick.Options{WaitableTypes: []string{"email"}})
	big := bytes.Repeat([]byte("x"), quick.InlinePayload+1)
	res := e.enqueue(t,
		quick.NewJob{TaskType: "email", Payload: big, MaxAttempts: 1, UniqueKey: "u1"},
		quick.NewJob{TaskType: "email", Payload: []byte("ok"), MaxAttempts: 2})
	var hooked []quick.DeadLettered
	e.q.OnDeadLetter("email", func(_ kv.Transaction, d quick.DeadLettered) error {
		hooked = append(hooked, d)
		return nil
	})
	c := e.zclaim(t, quick.ClaimOptions{Max: 10})
	if len(c.Jobs) != 2 {
		t.Fatalf("claim = %d jobs", len(c.Jobs))
	}
	for _, l := range c.Jobs {
		if l.ID == res[0].ID && !bytes.Equal(l.Payload, big) {
			t.Fatalf("the payload kept beside the job came back as %d bytes", len(l.Payload))
		}
	}
	e.clk.Advance(time.Minute)
	c = e.zclaim(t, quick.ClaimOptions{Max: 10})
	if len(c.Jobs) != 1 || c.Jobs[0].ID != res[1].ID || c.DeadLettered != 1 {
		t.Fatalf("claim after lapse = %+v", c)
	}
	if len(hooked) != 1 || hooked[0].ID != res[0].ID || !bytes.Equal(hooked[0].Payload, big) {
		t.Fatalf("dead-letter hook saw %+v", hooked)
	}
	n, err := e.q.DeadCount(e.ctx, "email")
	if err != nil || n != 1 {
		t.Fatalf("dead count %d, %v", n, err)
	}
	page, err := e.q.ListDead(e.ctx, quick.ListDeadOptions{TaskType: "email"})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != res[0].ID || !bytes.Equal(page.Jobs[0].Payload, big) ||
		page.Jobs[0].Attempt != 1 || page.Jobs[0].UniqueKey != "u1" {
		t.Fatalf("dead letters %+v, %v", page, err)
	}
	o, err := e.q.Outcome(e.ctx, res[0].ID)
	if err != nil || o.Kind != quick.OutcomeDeadLettered {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	// The dead job freed its unique key.
	again := e.enqueue(t, quick.NewJob{TaskType: "email", UniqueKey: "u1"})
	if again[0].Duplicate {
		t.Fatalf("unique key still held after the dead letter: %+v", again[0])
	}
}

func TestZoneEnqueueDuplicatesAndUniqueKeys(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	id := e.q.NewID()
	res := e.enqueue(t,
		quick.NewJob{ID: id, TaskType: "email"},
		quick.NewJob{ID: id, TaskType: "email"},
		quick.NewJob{TaskType: "email", UniqueKey: "k"},
		quick.NewJob{TaskType: "email", UniqueKey: "k"})
	if res[0].Duplicate || !res[1].Duplicate || res[1].ID != id || res[2].Duplicate || !res[3].Duplicate || res[3].ID != res[2].ID {
		t.Fatalf("batch = %+v", res)
	}
	// A later enqueue of a held unique key returns its holder.
	later := e.enqueue(t, quick.NewJob{TaskType: "email", UniqueKey: "k"})
	if !later[0].Duplicate || later[0].ID != res[2].ID {
		t.Fatalf("later = %+v", later)
	}
	// Enqueueing the same jobs (same IDs) again is a duplicate.
	again := e.enqueue(t, quick.NewJob{ID: id, TaskType: "email"}, quick.NewJob{ID: id, TaskType: "email"})
	if !again[0].Duplicate || !again[1].Duplicate {
		t.Fatalf("re-enqueue = %+v", again)
	}
	c := e.zclaim(t, quick.ClaimOptions{Max: 10})
	if len(c.Jobs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(c.Jobs))
	}
}

func TestZoneEnqueueValidation(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	for _, j := range []quick.NewJob{
		{TaskType: ""},
		{TaskType: "email", Payload: make([]byte, quick.MaxPayloadSize+1)},
		{TaskType: "email", Delay: -time.Second},
		{TaskType: "email", Priority: 7},
	} {
		if _, err := e.q.Enqueue(e.ctx, j); err == nil {
			t.Fatalf("enqueue %+v: no error", j)
		}
	}
	if _, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email"}); err == nil {
		t.Fatal("claim without a holder: no error")
	}
	if _, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lane: &quick.LaneLease{TaskType: "email"}}); err == nil {
		t.Fatal("claim with a forged pointer: no error")
	}
}

func TestZoneDelayedJobsAndPriorities(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	e.enqueue(t,
		quick.NewJob{TaskType: "email", Payload: []byte("later"), Delay: 10 * time.Second},
		quick.NewJob{TaskType: "email", Payload: []byte("low"), Priority: quick.Low},
		quick.NewJob{TaskType: "email", Payload: []byte("high"), Priority: quick.High})
	var got []string
	for range 2 {
		c := e.zclaim(t, quick.ClaimOptions{Max: 10})
		for _, l := range c.Jobs {
			got = append(got, string(l.Payload))
		}
	}
	if fmt.Sprint(got) != "[high low]" {
		t.Fatalf("claimed %v, want [high low]", got)
	}
	c := e.zclaim(t, quick.ClaimOptions{})
	if len(c.Jobs) != 0 || !c.NextVest.Equal(epoch.Add(10*time.Second)) {
		t.Fatalf("claim before the delay = %+v", c)
	}
	e.clk.Advance(10 * time.Second)
	c = e.zclaim(t, quick.ClaimOptions{})
	if len(c.Jobs) != 1 || string(c.Jobs[0].Payload) != "later" {
		t.Fatalf("claim after the delay = %+v", c)
	}
}

// A big tenant's backlog does not delay small tenants: the lane of the
// big one goes to the back of the vested pointers after each claim, behind
// every second that vested earlier (within one second, claims pick among
// the pointers at random: pointer.go).
func TestZoneFairnessSmallTenantsAreNotStuckBehindABigOne(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	big := make([]quick.NewJob, 500)
	for i := range big {
		big[i] = quick.NewJob{TaskType: "email", ItemSpace: "big"}
	}
	e.enqueue(t, big...)
	small := map[quick.ID]string{}
	for i := range 3 {
		e.clk.Advance(time.Millisecond)
		r := e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("small-%d", i)})
		small[r[0].ID] = fmt.Sprintf("small-%d", i)
	}
	e.clk.Advance(time.Second)
	// The big lane may be taken first (its pointer is in the small ones'
	// second), but it is handed back into the next second.
	for claim := 1; claim <= 4; claim++ {
		c := e.zclaim(t, quick.ClaimOptions{Max: 10, Peek: 1})
		for _, l := range c.Jobs {
			delete(small, l.ID)
		}
	}
	if len(small) != 0 {
		t.Fatalf("small tenants not claimed within 4 claims: %v", small)
	}
}

// Claimers and enqueuers at once, over several tenants and lanes: every
// job is claimed exactly once (the leases outlive the test), none lost.
func TestZoneConcurrentEnqueueAndClaim(t *testing.T) {
	e := zonesEnv(t, quick.Options{ZoneLanes: 2})
	const enqueuers, perEnqueuer, claimers = 3, 120, 4
	var mu sync.Mutex
	want, seen := map[quick.ID]bool{}, map[quick.ID]int{}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perEnqueuer {
				res, err := e.q.Enqueue(e.ctx, quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("t%d", (g+i)%5)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[res[0].ID] = true
				mu.Unlock()
			}
		}()
	}
	var cwg sync.WaitGroup
	for w := range claimers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			for idle := 0; idle < 500; {
				c, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{
					TaskType: "email", Holder: fmt.Sprintf("w%d", w), Max: 3, Lease: 10 * time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, l := range c.Jobs {
					seen[l.ID]++
				}
				n := len(seen)
				mu.Unlock()
				select {
				case <-done:
					if len(c.Jobs) == 0 && !c.More && n >= enqueuers*perEnqueuer {
						return
					}
					if len(c.Jobs) == 0 {
						idle++ // a lost job would leave claimers idle: give up
					}
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	cwg.Wait()
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("job %s claimed %d times", id, seen[id])
		}
	}
	if len(seen) != len(want) || len(want) != enqueuers*perEnqueuer {
		t.Errorf("claimed %d distinct jobs, enqueued %d", len(seen), len(want))
	}
}
