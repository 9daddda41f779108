package quick

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/quickfdb/quickfdb/kv"
)

// TestShortModel drives zones jobs through random interleavings of
// short-job hand-outs, acks of every kind, promotions, hand-backs,
// ExtendPointer, holders that vanish, takeovers with per-job leases and
// clock advances, over a database that injects commit faults, and checks
// after every step: every job not completed has exactly one key; no job is
// completed twice; every lane that holds a key has a lane state and a
// pointer where the state says, and an unleased lane's pointer vests no
// later than its earliest key (or is vested already). At the end the surviving workers' leases are
// forgotten and the jobs drained: none is lost.
func TestShortModel(t *testing.T) {
	cfg := kv.Faults{
		UnknownCommitted:     0.04,
		UnknownNotCommitted:  0.04,
		Conflict:             0.04,
		TimedOutCommitted:    0.02,
		TimedOutNotCommitted: 0.02,
		CancelledCommitted:   0.02,
	}
	var total kv.FaultStats
	var jobs, doneLive int
	rapid.Check(t, func(rt *rapid.T) {
		f := cfg
		f.Seed = rapid.Uint64().Draw(rt, "seed")
		e := newZEnv(t, Options{}, &f)
		m := &smodel{e: e, rt: rt, placed: map[ID]bool{}, done: map[ID]bool{}, workers: make([]sworker, 3)}
		rt.Repeat(map[string]func(*rapid.T){
			"place":    m.place,
			"claim":    m.claim,
			"claim2":   m.claim,
			"ack":      m.ack,
			"ack2":     m.ack,
			"ack3":     m.ack,
			"extend":   m.extend,
			"handback": m.handBack,
			"renew":    m.renew,
			"vanish":   m.vanish,
			"takeover": m.takeover,
			"advance":  m.advance,
			"":         m.check,
		})
		jobs += len(m.placed)
		doneLive += len(m.done)
		m.drain()
		s := e.faulty.Stats()
		total.UnknownCommitted += s.UnknownCommitted
		total.UnknownNotCommitted += s.UnknownNotCommitted
		total.Conflicts += s.Conflicts
		total.TimedOutCommitted += s.TimedOutCommitted
		total.TimedOutNotCommitted += s.TimedOutNotCommitted
		total.CancelledCommitted += s.CancelledCommitted
	})
	t.Logf("%d jobs, %d completed by the random steps and the rest by the drain; faults injected: %+v", jobs, doneLive, total)
	if missing := total.Missing(cfg); len(missing) > 0 && !t.Failed() && total.Total() > 200 {
		t.Fatalf("fault kinds never injected: %v", missing)
	}
}

type sworker struct {
	p       *LaneLease
	running []Lease
}

type smodel struct {
	e       *zenv
	rt      *rapid.T
	placed  map[ID]bool
	done    map[ID]bool
	workers []sworker
}

var modelSpaces = []string{"a", "b"}

func (m *smodel) place(rt *rapid.T) {
	n := rapid.IntRange(1, 6).Draw(rt, "n")
	jobs := make([]zjob, n)
	for i := range jobs {
		jobs[i] = zjob{ItemSpace: rapid.SampledFrom(modelSpaces).Draw(rt, "space"), MaxAttempts: 1000,
			Delay: time.Duration(rapid.IntRange(0, 3).Draw(rt, "delay")) * time.Second}
	}
	for _, id := range m.e.zput(m.rt, jobs...) {
		m.placed[id] = true
	}
}

// fine accepts the errors a lease operation may return under races.
func (m *smodel) fine(err error) {
	if err != nil && !IsLeaseLost(err) && !IsLaneLost(err) {
		m.rt.Fatalf("unexpected error: %v", err)
	}
}

func (m *smodel) claim(rt *rapid.T) {
	w := &m.workers[rapid.IntRange(0, len(m.workers)-1).Draw(rt, "worker")]
	res, found, err := zshortClaim(m.e.ctx, m.e.q, "email", "w", w.p, rapid.IntRange(1, 5).Draw(rt, "max"))
	if IsLaneLost(err) || errors.Is(err, ErrInvalidOption) {
		w.p = nil // lost, or a lapsed lane: a takeover runs it
		return
	}
	m.fine(err)
	if err != nil || !found {
		return
	}
	w.p = res.Lane
	w.running = append(w.running, res.Jobs...)
}

// pick removes and returns a random running lease of a random worker.
func (m *smodel) pick(rt *rapid.T) (*sworker, Lease, bool) {
	w := &m.workers[rapid.IntRange(0, len(m.workers)-1).Draw(rt, "worker")]
	if len(w.running) == 0 {
		return w, Lease{}, false
	}
	i := rapid.IntRange(0, len(w.running)-1).Draw(rt, "lease")
	l := w.running[i]
	w.running = append(w.running[:i], w.running[i+1:]...)
	return w, l, true
}

func (m *smodel) ack(rt *rapid.T) {
	_, l, ok := m.pick(rt)
	if !ok {
		return
	}
	kind := rapid.SampledFrom([]AckKind{AckComplete, AckComplete, AckComplete, AckFail, AckSnooze, AckRelease}).Draw(rt, "kind")
	res, err := m.e.q.Ack(m.e.ctx, Ack{Lease: l, Kind: kind, Error: "x", Delay: time.Second})
	m.fine(err)
	if err == nil && res[0].Err == nil && kind == AckComplete {
		if m.done[l.ID] {
			rt.Fatalf("job %s completed twice", l.ID)
		}
		m.done[l.ID] = true
	}
}

func (m *smodel) extend(rt *rapid.T) {
	w, l, ok := m.pick(rt)
	if !ok {
		return
	}
	l2, err := m.e.q.Extend(m.e.ctx, l, MinLease)
	m.fine(err)
	if err == nil {
		w.running = append(w.running, l2)
	}
}

func (m *smodel) handBack(rt *rapid.T) {
	w := &m.workers[rapid.IntRange(0, len(m.workers)-1).Draw(rt, "worker")]
	if w.p == nil {
		return
	}
	// The leases handed out under this lane lease (and per-job ones, which
	// come back as they are); short ones of an earlier lane stay as they are.
	var mine, other []Lease
	for _, l := range w.running {
		if l.Short() && l.zl.ptr.token != w.p.token {
			other = append(other, l)
		} else {
			mine = append(mine, l)
		}
	}
	got, err := m.e.q.Consumer().HandBack(m.e.ctx, *w.p, mine, MinLease)
	m.fine(err)
	w.p = nil
	w.running = append(got, other...)
}

func (m *smodel) renew(rt *rapid.T) {
	w := &m.workers[rapid.IntRange(0, len(m.workers)-1).Draw(rt, "worker")]
	if w.p == nil {
		return
	}
	p, err := m.e.q.Consumer().ExtendLane(m.e.ctx, *w.p, 5*time.Second)
	m.fine(err)
	if err == nil {
		w.p = &p
	}
}

func (m *smodel) vanish(rt *rapid.T) {
	w := &m.workers[rapid.IntRange(0, len(m.workers)-1).Draw(rt, "worker")]
	*w = sworker{}
}

// takeover is a per-job-lease claim of a vested lane (a lapsed short lane
// is worked so), with its leases given to a worker.
func (m *smodel) takeover(rt *rapid.T) {
	w := &m.workers[rapid.IntRange(0, len(m.workers)-1).Draw(rt, "worker")]
	ls, err := perJobClaim(m.e, m.e.q, rapid.IntRange(1, 5).Draw(rt, "max"))
	if err != nil {
		rt.Fatalf("takeover: %v", err)
	}
	w.running = append(w.running, ls...)
}

func (m *smodel) advance(rt *rapid.T) {
	m.e.clk.Advance(time.Duration(rapid.IntRange(1, 12).Draw(rt, "s")) * time.Second)
}

// perJobClaim acquires a vested lane, takes up to n vested jobs with
// per-job leases and hands the lane back, in one transaction.
func perJobClaim(e *zenv, q *Queue, n int) ([]Lease, error) {
	var out []Lease
	now := q.Now()
	err := q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		out = nil
		p, found, _, err := q.acquire(tr, "email", "t", 0, q.opts.LaneLeaseTime, false, now)
		if err != nil || !found {
			return err
		}
		if out, err = zclaimTx(tr, p.lane, "t", MinLease, n, now); err != nil {
			return err
		}
		key, vestMs, err := q.laneFirst(tr, p.lane, now.UnixMilli())
		if err != nil {
			return err
		}
		if key == nil {
			return q.releaseLane(tr, &p, -1, nil)
		}
		return q.releaseLane(tr, &p, max(vestMs, now.UnixMilli()), key)
	})
	return out, err
}

// check compares the database with the model.
func (m *smodel) check(rt *rapid.T) {
	if err := m.checkErr(); err != nil {
		rt.Fatal(err)
	}
}

func (m *smodel) checkErr() error {
	seen := map[ID]int{}
	for _, space := range modelSpaces {
		l := m.e.lane0("email", space)
		jks, _ := m.e.laneKeys(m.rt, l)
		for _, jk := range jks {
			seen[jk.ID]++
		}
		v := m.e.get(m.rt, l.stateKey())
		if len(jks) == 0 {
			continue
		}
		if v == nil {
			return fmt.Errorf("lane %s holds %d keys and has no state", l, len(jks))
		}
		var s laneState
		if err := s.unmarshal(v); err != nil {
			return err
		}
		if m.e.get(m.rt, m.e.truth.pointerKeyOf(l, s.PtrMs)) == nil {
			return fmt.Errorf("lane %s: no pointer at its state's %d", l, s.PtrMs)
		}
		// A lane handed back with vested jobs left gets a pointer at the
		// time of the hand-back: vested, which it stays.
		if now := m.e.clk.Now().UnixMilli(); !s.leased() && s.PtrMs > max(jks[0].VestMs, now) {
			return fmt.Errorf("lane %s: unleased pointer at %d after its first key at %d (now %d)", l, s.PtrMs, jks[0].VestMs, now)
		}
	}
	for id := range m.placed {
		switch n := seen[id]; {
		case m.done[id] && n != 0:
			return fmt.Errorf("job %s completed but has %d keys", id, n)
		case !m.done[id] && n != 1:
			return fmt.Errorf("job %s not completed has %d keys", id, n)
		}
	}
	return nil
}

// drain forgets every worker and completes what is left with takeovers.
func (m *smodel) drain() {
	m.check(m.rt)
	for i := range m.workers {
		m.workers[i] = sworker{}
	}
	m.e.faulty.SetEnabled(false)
	for round := 0; len(m.done) < len(m.placed); round++ {
		if round > 1000 {
			m.rt.Fatalf("drain stuck: %d of %d jobs done", len(m.done), len(m.placed))
		}
		ls, err := perJobClaim(m.e, m.e.q, 100)
		if err != nil {
			m.rt.Fatal(err)
		}
		if len(ls) == 0 {
			m.e.clk.Advance(5 * time.Second)
			continue
		}
		res, err := m.e.q.Ack(m.e.ctx, completes(ls)...)
		if err != nil {
			m.rt.Fatal(err)
		}
		for i, r := range res {
			if r.Err == nil {
				if m.done[ls[i].ID] {
					m.rt.Fatalf("job %s completed twice", ls[i].ID)
				}
				m.done[ls[i].ID] = true
			}
		}
	}
	m.check(m.rt)
}
