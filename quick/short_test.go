package quick

import (
	"errors"
	"testing"
	"time"
)

// Short-job mode: jobs handed out under the lane lease, acked by clears.

func (e *zenv) shortClaim(t testing.TB, holder string, p *LaneLease, max int) Claimed {
	t.Helper()
	res, found, err := zshortClaim(e.ctx, e.q, "email", holder, p, max)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatal("no lane was vested")
	}
	if res.Lane == nil {
		t.Fatal("a short claim did not keep its lane")
	}
	return res
}

func completes(ls []Lease) []Ack {
	acks := make([]Ack, len(ls))
	for i, l := range ls {
		acks[i] = Ack{Lease: l, Kind: AckComplete}
	}
	return acks
}

// A holder takes a lane's jobs in batches without writing, completes each
// batch with one commit of clears, and hands the empty lane back.
func TestShortHandsOutAndCompletesInBatches(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, make([]zjob, 250)...)
	l0 := e.lane0("email", "")
	res := e.shortClaim(t, "w", nil, 100)
	p := res.Lane
	if len(res.Jobs) != 100 || !res.More || !p.Short || p.Lapsed {
		t.Fatalf("first claim: %d jobs, more %v, pointer %+v", len(res.Jobs), res.More, p)
	}
	for _, l := range res.Jobs {
		if !l.Short() || l.Attempt != 1 || !l.Deadline.Equal(p.Deadline) || l.Holder != "w" {
			t.Fatalf("short lease %+v", l)
		}
	}
	if _, vs := e.laneKeys(t, l0); vs[0].Attempt != 0 || vs[0].Token != 0 {
		t.Fatalf("a short hand-out wrote the job: %+v", vs[0])
	}
	seen := map[ID]bool{}
	for round := 0; ; round++ {
		for _, l := range res.Jobs {
			if seen[l.ID] {
				t.Fatalf("job %s handed out twice", l.ID)
			}
			seen[l.ID] = true
		}
		before := e.db.Stats()
		if _, err := e.q.Ack(e.ctx, completes(res.Jobs)...); err != nil {
			t.Fatal(err)
		}
		if d := e.db.Stats().Sub(before); d.Commits != 1 || d.Mutations != int64(len(res.Jobs)) {
			t.Fatalf("acking %d short jobs: %v; want one commit of clears", len(res.Jobs), d)
		}
		if !res.More {
			break
		}
		before = e.db.Stats()
		res = e.shortClaim(t, "w", res.Lane, 100)
		// One write per batch, whatever its size: the hand-out mark, by
		// which a takeover counts the runs should this holder die.
		if d := e.db.Stats().Sub(before); d.Commits != 1 || d.Mutations != 1 {
			t.Fatalf("a claim that continues on its lane: %v; want one commit of the hand-out mark", d)
		}
	}
	if len(seen) != 250 {
		t.Fatalf("%d jobs handed out, want 250", len(seen))
	}
	if got, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, nil, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("hand back = %v, %v", got, err)
	}
	if _, ok := e.laneState(t, l0); ok || e.pointers(t, "email") != 0 {
		t.Fatal("the empty lane kept its state or pointer")
	}
}

// A holder that dies loses nothing: its lane lease lapses, another worker
// takes the lane over (Lapsed) and runs what was not cleared with per-job
// leases; the dead holder's late acks change nothing.
func TestShortHolderDiesAndAnotherRunsTheRest(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	ids := e.zput(t, make([]zjob, 100)...)
	res := e.shortClaim(t, "w1", nil, 100)
	if _, err := e.q.Ack(e.ctx, completes(res.Jobs[:40])...); err != nil {
		t.Fatal(err)
	}
	// w1 vanishes. Before its lease lapses nobody takes the lane.
	if _, found, err := zshortClaim(e.ctx, e.q, "email", "w2", nil, 100); err != nil || found {
		t.Fatalf("a held lane was taken: %v, %v", found, err)
	}
	e.clk.Advance(e.q.opts.LaneLeaseTime)
	p2, ls := e.zacquireClaim(t, e.q, "email", "w2", time.Minute, 100)
	if !p2.Lapsed || len(ls) != 60 {
		t.Fatalf("takeover: lapsed %v, %d jobs; want lapsed and the 60 not cleared", p2.Lapsed, len(ls))
	}
	for _, l := range ls {
		if l.Attempt != 2 {
			t.Fatalf("takeover lease attempt %d, want 2 (w1's run and this one, counted)", l.Attempt)
		}
	}
	// w1 comes back: its acks fail, and clear nothing.
	for _, kind := range []AckKind{AckComplete, AckFail, AckRelease} {
		r, err := e.q.Ack(e.ctx, Ack{Lease: res.Jobs[50], Kind: kind})
		if !IsLeaseLost(err) || !IsLaneLost(err) || len(r) != 1 || !IsLaneLost(r[0].Err) {
			t.Fatalf("%s by the stale holder = %+v, %v; want a lost lease and lane", kind, r, err)
		}
		var lost *LeaseLostError
		if !errors.As(r[0].Err, &lost) || lost.Reason != "lane" {
			t.Fatalf("%s by the stale holder: %v", kind, r[0].Err)
		}
	}
	if _, err := e.q.Extend(e.ctx, res.Jobs[50], time.Minute); !IsLaneLost(err) {
		t.Fatalf("extend by the stale holder = %v", err)
	}
	if _, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, res.Jobs[40:], time.Minute); !IsLaneLost(err) {
		t.Fatalf("hand back by the stale holder = %v", err)
	}
	if _, err := e.q.Consumer().ExtendLane(e.ctx, *res.Lane, 5*time.Second); !IsLaneLost(err) {
		t.Fatalf("extend pointer by the stale holder = %v", err)
	}
	if err := e.q.Consumer().ReleaseLane(e.ctx, *res.Lane); !IsLaneLost(err) {
		t.Fatalf("release pointer by the stale holder = %v", err)
	}
	jks, _ := e.laneKeys(t, e.lane0("email", ""))
	if len(jks) != 60 {
		t.Fatalf("%d keys left, want the 60 w2 holds", len(jks))
	}
	if _, err := e.q.Ack(e.ctx, completes(ls)...); err != nil {
		t.Fatal(err)
	}
	_ = ids
}

// A lapsed short lane nobody took over still holds: its holder completes.
func TestShortLapsedButNotTakenStillHolds(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, make([]zjob, 3)...)
	res := e.shortClaim(t, "w", nil, 10)
	e.clk.Advance(time.Minute)
	if _, err := e.q.Ack(e.ctx, completes(res.Jobs)...); err != nil {
		t.Fatal(err)
	}
	if jks, _ := e.laneKeys(t, e.lane0("email", "")); len(jks) != 0 {
		t.Fatalf("keys left %+v", jks)
	}
}

// A long job is promoted to a lease of its own by Extend, without a gap:
// it stays protected after the lane is handed back and the lane lease's
// deadline passes, and completes under the new lease.
func TestShortExtendPromotesALongJob(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, make([]zjob, 2)...)
	res := e.shortClaim(t, "w", nil, 10)
	long, quick := res.Jobs[0], res.Jobs[1]
	e.clk.Advance(2 * time.Second)
	l2, err := e.q.Extend(e.ctx, long, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := zepoch.Add(62 * time.Second)
	if l2.Short() || !l2.Deadline.Equal(want) || l2.Attempt != 1 || l2.zl.v.Token == 0 || l2.zl.v.Attempt != 1 || l2.zl.v.Holder != "w" {
		t.Fatalf("promoted lease %+v (value %+v)", l2, l2.zl.v)
	}
	if l2.token() != long.token() || long.token() == quick.token() {
		t.Fatalf("run tokens: short %x, promoted %x, other %x; want the run to keep its token", long.token(), l2.token(), quick.token())
	}
	if err := e.q.Complete(e.ctx, long); !IsLeaseLost(err) {
		t.Fatalf("complete with the short lease after promotion = %v", err)
	}
	if err := e.q.Complete(e.ctx, quick); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if s, ok := e.laneState(t, e.lane0("email", "")); !ok || s.PtrMs != want.UnixMilli() || s.leased() {
		t.Fatalf("lane after hand-back %+v, %v; want the pointer at the promoted deadline", s, ok)
	}
	e.clk.Advance(30 * time.Second) // past the lane lease, within the job's
	if _, found, err := zshortClaim(e.ctx, e.q, "email", "w2", nil, 10); err != nil || found {
		t.Fatalf("the promoted job's lane was taken before its lease ended: %v, %v", found, err)
	}
	l3, err := e.q.Extend(e.ctx, l2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.q.Complete(e.ctx, l3); err != nil {
		t.Fatal(err)
	}
}

// HandBack promotes the running jobs in the transaction that hands the
// lane back; jobs never handed out keep the lane vested.
func TestShortHandBackPromotesTheRunning(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, make([]zjob, 5)...)
	res := e.shortClaim(t, "w", nil, 3)
	if _, err := e.q.Ack(e.ctx, completes(res.Jobs[:1])...); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	before := e.db.Stats()
	got, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, res.Jobs[1:], time.Minute)
	if err != nil || len(got) != 2 {
		t.Fatalf("hand back = %+v, %v", got, err)
	}
	if d := e.db.Stats().Sub(before); d.Commits != 1 {
		t.Fatalf("hand back in %d commits, want 1", d.Commits)
	}
	for i, l := range got {
		if l.Short() || l.ID != res.Jobs[1+i].ID || !l.Deadline.Equal(zepoch.Add(61*time.Second)) || l.Attempt != 1 {
			t.Fatalf("promoted lease %+v", l)
		}
	}
	l0 := e.lane0("email", "")
	if s, ok := e.laneState(t, l0); !ok || s.leased() || s.PtrMs != e.clk.Now().UnixMilli() {
		t.Fatalf("lane %+v, %v; want it vested now for the 2 never handed out", s, ok)
	}
	// Another worker takes the rest; the promoted ones stay with w.
	res2 := e.shortClaim(t, "w2", nil, 10)
	if len(res2.Jobs) != 2 {
		t.Fatalf("the next holder got %d jobs, want the 2 never handed out", len(res2.Jobs))
	}
	if _, err := e.q.Ack(e.ctx, completes(append(got, res2.Jobs...))...); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Consumer().HandBack(e.ctx, *res2.Lane, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if e.pointers(t, "email") != 0 {
		t.Fatal("pointer left for an empty lane")
	}
}

// A lost running lease comes back unchanged with its error joined; the
// others are promoted and the lane handed back.
func TestShortHandBackReportsLostJobs(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, make([]zjob, 2)...)
	res := e.shortClaim(t, "w", nil, 2)
	if err := e.q.Complete(e.ctx, res.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	got, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, res.Jobs, time.Minute)
	if !IsLeaseLost(err) || len(got) != 2 || !got[0].Short() || got[1].Short() {
		t.Fatalf("hand back = %+v, %v", got, err)
	}
	if s, ok := e.laneState(t, e.lane0("email", "")); !ok || s.PtrMs != got[1].Deadline.UnixMilli() {
		t.Fatalf("lane %+v, %v", s, ok)
	}
}

// HandBack of many running jobs promotes them in bounded transactions
// while the lane stays held, and hands it back in the last.
func TestShortHandBackIsBounded(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, make([]zjob, 1200)...)
	res := e.shortClaim(t, "w", nil, 1200)
	before := e.db.Stats()
	got, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, res.Jobs, time.Minute)
	if err != nil || len(got) != 1200 {
		t.Fatalf("hand back = %d, %v", len(got), err)
	}
	if d := e.db.Stats().Sub(before); d.Commits != 3 {
		t.Fatalf("1200 promotions in %d commits, want 3", d.Commits)
	}
	if s, ok := e.laneState(t, e.lane0("email", "")); !ok || s.leased() || s.PtrMs != zepoch.Add(time.Minute).UnixMilli() {
		t.Fatalf("lane %+v, %v", s, ok)
	}
}

func TestExtendPointerMovesTheLease(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, make([]zjob, 2)...)
	res := e.shortClaim(t, "w", nil, 1)
	e.clk.Advance(4 * time.Second)
	p2, err := e.q.Consumer().ExtendLane(e.ctx, *res.Lane, 10*time.Second)
	if err != nil || !p2.Deadline.Equal(zepoch.Add(14*time.Second)) {
		t.Fatalf("extend pointer = %+v, %v", p2, err)
	}
	s, ok := e.laneState(t, e.lane0("email", ""))
	if !ok || s.PtrMs != p2.Deadline.UnixMilli() || s.Token != res.Lane.token || e.pointers(t, "email") != 1 {
		t.Fatalf("lane after extend %+v", s)
	}
	e.clk.Advance(5 * time.Second) // past the first deadline
	if _, found, _ := zshortClaim(e.ctx, e.q, "email", "w2", nil, 1); found {
		t.Fatal("an extended lane lease was taken over")
	}
	// The short lease handed out before the extension still completes,
	// and the holder's next claim continues.
	if err := e.q.Complete(e.ctx, res.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	res2 := e.shortClaim(t, "w", &p2, 1)
	if len(res2.Jobs) != 1 || res2.Jobs[0].ID == res.Jobs[0].ID {
		t.Fatalf("continuing claim %+v", res2.Jobs)
	}
	if _, err := e.q.Consumer().ExtendLane(e.ctx, p2, 100*time.Millisecond); !errors.Is(err, ErrInvalidLease) {
		t.Fatalf("extend pointer by 100ms = %v", err)
	}
}

// Fail, snooze, release and dead-letter of short leases: the lane's hold
// is checked, the job moves as a per-job lease's would, and only a fail
// writes the attempt.
func TestShortFailSnoozeReleaseDeadLetter(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	ids := e.zput(t, zjob{MaxAttempts: 3}, zjob{MaxAttempts: 3}, zjob{MaxAttempts: 3}, zjob{MaxAttempts: 3}, zjob{MaxAttempts: 1})
	res := e.shortClaim(t, "w", nil, 10)
	byID := map[ID]Lease{}
	for _, l := range res.Jobs {
		byID[l.ID] = l
	}
	e.clk.Advance(time.Second)
	out, err := e.q.Ack(e.ctx,
		Ack{Lease: byID[ids[0]], Kind: AckFail, Error: "boom"},
		Ack{Lease: byID[ids[1]], Kind: AckSnooze, Delay: time.Hour},
		Ack{Lease: byID[ids[2]], Kind: AckRelease},
		Ack{Lease: byID[ids[3]], Kind: AckDeadLetter, Error: "poison"},
		Ack{Lease: byID[ids[4]], Kind: AckFail, Error: "last"},
	)
	if err != nil {
		t.Fatal(err)
	}
	now := zepoch.Add(time.Second)
	if !out[0].RunAt.Equal(now.Add(time.Minute)) || !out[1].RunAt.Equal(now.Add(time.Hour)) || !out[2].RunAt.Equal(now) || !out[3].Dead || !out[4].Dead {
		t.Fatalf("results %+v", out)
	}
	jks, vs := e.laneKeys(t, e.lane0("email", ""))
	got := map[ID]zjobValue{}
	for i, jk := range jks {
		got[jk.ID] = vs[i]
	}
	if len(got) != 3 || got[ids[0]].Attempt != 1 || got[ids[0]].LastError != "boom" || got[ids[1]].Attempt != 0 || got[ids[2]].Attempt != 0 {
		t.Fatalf("jobs after the acks %+v", got)
	}
	var rec record
	if err := rec.unmarshal(e.get(t, e.q.k.jobKey(ids[4]))); err != nil || rec.Attempts != 1 || rec.LastError != "last" {
		t.Fatalf("dead letter of the last attempt %+v, %v", rec, err)
	}
}

// A short job whose stored attempts are all spent (its last per-job
// holder vanished) is dead-lettered instead of handed out.
func TestShortDeadLettersExhaustedJobs(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	ids := e.zput(t, zjob{MaxAttempts: 1}, zjob{MaxAttempts: 1})
	ls := e.zclaim(t, e.lane0("email", ""), "gone", time.Minute, 1)
	e.clk.Advance(time.Minute)
	res := e.shortClaim(t, "w", nil, 10)
	other := ids[0]
	if other == ls[0].ID {
		other = ids[1]
	}
	if len(res.Jobs) != 1 || res.Jobs[0].ID != other || res.DeadLettered != 1 {
		t.Fatalf("claim %+v", res)
	}
	var rec record
	if err := rec.unmarshal(e.get(t, e.q.k.jobKey(ls[0].ID))); err != nil || rec.State != stateDead {
		t.Fatalf("exhausted job %+v, %v", rec, err)
	}
}
