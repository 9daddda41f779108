package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// synth builds histories for the checker: one producer batch per call to
// job, each job run once and completed under its claim's token.
type synth struct {
	h    History
	t0   int64
	next byte
}

func newSynth() *synth {
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC).UnixNano()
	return &synth{t0: t0, h: History{
		Start: t0, BaselineEnd: t0 + int64(10*time.Second),
		Records: &Records{Enq: map[quick.ID]Enq{}, Count: map[quick.ID]int64{}},
		Queued:  map[string][]quick.ID{}, Dead: map[string][]quick.ID{},
	}}
}

func (s *synth) id() quick.ID {
	s.next++
	var id quick.ID
	id[0], id[15] = 0x42, s.next
	return id
}

// job adds a committed batch of one job of tt, run and finished at second
// at by worker w under token 7.
func (s *synth) job(tt string, at int) quick.ID {
	id := s.id()
	b := &BatchRec{Producer: 0, Batch: len(s.h.Batches), Attempts: [][]quick.ID{{id}}, Types: []string{tt},
		Outcome: Committed, Done: s.t0 + int64(at)*int64(time.Second) - int64(50*time.Millisecond), Marker: []quick.ID{id}, Found: true}
	s.h.Batches = append(s.h.Batches, b)
	s.h.Records.Enq[id] = Enq{Batch: b.Batch, Type: tt}
	ms := (s.t0 + int64(at)*int64(time.Second)) / int64(time.Millisecond)
	s.h.Events = append(s.h.Events,
		Event{Kind: EvStart, Worker: "w1", Job: id, Token: 7, Attempt: 1, At: s.t0 + int64(at)*int64(time.Second) - int64(10*time.Millisecond)},
		Event{Kind: EvEnd, Worker: "w1", Job: id, Token: 7, Attempt: 1, At: ms * int64(time.Millisecond), Note: "ok"})
	d := Done{Worker: "w1", Attempt: 1, At: ms}
	if tt == TypePoison {
		d.Dead = true
		s.h.Dead[tt] = append(s.h.Dead[tt], id)
	}
	s.h.Records.Done = append(s.h.Records.Done, DoneRec{ID: id, Token: 7, Done: d})
	s.h.Records.Count[id] = 1
	return id
}

// cron adds a chain whose occurrences completed at the given seconds and
// whose next one is queued.
func (s *synth) cron(name string, secs ...int) {
	for _, sec := range secs {
		id := s.id()
		ms := (s.t0 + int64(sec)*int64(time.Second)) / int64(time.Millisecond)
		s.h.Events = append(s.h.Events, Event{Kind: EvStart, Worker: "w2", Job: id, Token: 1, Attempt: 1, At: ms * int64(time.Millisecond), Note: "cron"})
		s.h.Records.Done = append(s.h.Records.Done, DoneRec{ID: id, Token: 1, Done: Done{Worker: "w2", Attempt: 1, At: ms, Schedule: name, ScheduledAt: ms}})
	}
	next := s.id()
	s.h.Queued[TypeCron] = append(s.h.Queued[TypeCron], next)
	last := (s.t0 + int64(secs[len(secs)-1])*int64(time.Second)) / int64(time.Millisecond)
	s.h.Cron = append(s.h.Cron, CronEntry{Name: name, Alive: true, Next: last + 1000, NextID: next})
}

func (s *synth) check(t *testing.T, want ...string) Verdict {
	t.Helper()
	v := Check(s.h)
	all := strings.Join(v.Violations, "\n")
	if len(want) == 0 && !v.OK() {
		t.Fatalf("want no violation, got:\n%s", all)
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("want a violation containing %q, got:\n%s", w, all)
		}
	}
	return v
}

func TestCheckCleanHistory(t *testing.T) {
	s := newSynth()
	s.job(TypeLease, 1)
	s.job(TypeShort, 2)
	s.job(TypeCkpt, 5)
	s.job(TypePoison, 6)
	s.cron("chain-0", 1, 2, 4)
	// A failed producer transaction whose job exists nowhere.
	s.h.Batches = append(s.h.Batches, &BatchRec{Producer: 1, Attempts: [][]quick.ID{{s.id()}}, Types: []string{TypeLease}, Outcome: Failed})
	v := s.check(t)
	if v.Jobs != 4 || v.Completed != 3 || v.DeadLettered != 1 || v.GhostsChecked != 1 || v.BatchesFailed != 1 {
		t.Errorf("counts: %+v", v)
	}
	if v.CronOccurrences != 3 || v.CronChains != 1 || v.CronCollapsed != 1 {
		t.Errorf("cron: %d occurrences, %d chains, %d collapsed; want 3, 1, 1", v.CronOccurrences, v.CronChains, v.CronCollapsed)
	}
	if v.LongestGap != 2*time.Second || v.LongestGapAtS != 2 {
		t.Errorf("longest gap %v at %.1fs, want 2s at 2s (completions at 1, 1, 2, 2, 4, 5, 6 s)", v.LongestGap, v.LongestGapAtS)
	}
	if v.BaselineStart.N != 4 || v.BaselineStart.P50 != 40*time.Millisecond {
		t.Errorf("baseline enqueue-to-start %+v", v.BaselineStart)
	}
}

func TestCheckLostJob(t *testing.T) {
	s := newSynth()
	id := s.job(TypeLease, 1)
	s.h.Records.Done = nil
	delete(s.h.Records.Count, id)
	s.check(t, "LOST: job "+id.String())
}

func TestCheckStillQueued(t *testing.T) {
	s := newSynth()
	id := s.job(TypeLease, 1)
	s.h.Records.Done = nil
	s.h.Queued[TypeLease] = []quick.ID{id}
	s.check(t, "not finished: job "+id.String())
}

func TestCheckDuplicateEffect(t *testing.T) {
	s := newSynth()
	id := s.job(TypeLease, 1)
	s.h.Records.Count[id] = 2
	s.check(t, "duplicate effect: job "+id.String())
	s.h.Records.Count[id] = 1
	s.h.Records.Done = append(s.h.Records.Done, s.h.Records.Done[0])
	s.check(t, "duplicate effect: job "+id.String()+" (chaos.lease): 2 completion records")
}

// A completion by a run that was not the job's last claim: the earlier
// holder's write committed after the job was claimed again.
func TestCheckStaleToken(t *testing.T) {
	s := newSynth()
	id := s.job(TypeLease, 1)
	s.h.Events = append(s.h.Events, Event{Kind: EvStart, Worker: "w3", Job: id, Token: 9, Attempt: 2, At: s.t0 + int64(3*time.Second)})
	s.check(t, "stale token: job "+id.String()+": completion under token 7 (attempt 1, w1); its last claim was token 9 (attempt 2, w3)")
}

// In short-job mode a takeover's per-job claim shows the hand-out's
// attempt; it is the later claim, whatever the order of the starts.
func TestCheckShortTakeoverIsTheLastClaim(t *testing.T) {
	s := newSynth()
	id := s.job(TypeShort, 1)
	// w4 was handed the job first and vanished; w1 took the lane over.
	s.h.Events = append(s.h.Events, Event{Kind: EvStart, Worker: "w4", Job: id, Token: 7, Attempt: 1, Short: true, At: s.t0})
	v := s.check(t)
	if v.RunAgain != 1 || v.Reasons["short hand-out, no end reported"] != 1 {
		t.Errorf("run again %d, reasons %v", v.RunAgain, v.Reasons)
	}
	// The same with the later start first in the history: the per-job
	// claim is still the last.
	s.h.Events[0], s.h.Events[2] = s.h.Events[2], s.h.Events[0]
	s.check(t)
}

func TestCheckJobOfFailedTransactionExists(t *testing.T) {
	s := newSynth()
	ghost := s.id()
	s.h.Batches = append(s.h.Batches, &BatchRec{Producer: 1, Attempts: [][]quick.ID{{ghost}}, Types: []string{TypeLease}, Outcome: Failed})
	s.h.Records.Enq[ghost] = Enq{Producer: 1}
	s.check(t, "job of a failed producer transaction exists: "+ghost.String())

	// An attempt that did not commit, of a transaction whose retry did.
	s = newSynth()
	id := s.job(TypeLease, 1)
	first := s.id()
	s.h.Batches[0].Attempts = [][]quick.ID{{first}, {id}}
	s.h.Events = append(s.h.Events, Event{Kind: EvStart, Worker: "w2", Job: first, Token: 1, Attempt: 1, At: s.t0})
	s.check(t, "job of a failed producer transaction exists: "+first.String()+" from producer 0 batch 0 attempt 1 (committed)")
}

func TestCheckProducerOutcomes(t *testing.T) {
	s := newSynth()
	s.job(TypeLease, 1)
	s.h.Batches[0].Outcome = Failed
	s.check(t, "failed producer transaction applied: producer 0 batch 0")

	s = newSynth()
	s.job(TypeLease, 1)
	s.h.Batches[0].Found, s.h.Batches[0].Marker = false, nil
	s.check(t, "lost producer transaction: producer 0 batch 0 committed, but its marker is missing")

	// Unknown and applied is fine; its jobs count as committed.
	s = newSynth()
	s.job(TypeLease, 1)
	s.h.Batches[0].Outcome = Unknown
	if v := s.check(t); v.UnknownApplied != 1 || v.Jobs != 1 {
		t.Errorf("unknown applied %d, jobs %d", v.UnknownApplied, v.Jobs)
	}
}

func TestCheckPoison(t *testing.T) {
	s := newSynth()
	id := s.job(TypePoison, 1)
	s.h.Dead = map[string][]quick.ID{}
	s.check(t, "dead letter missing: job "+id.String())

	s = newSynth()
	id = s.job(TypeLease, 1)
	s.h.Records.Done[0].Dead = true
	s.h.Dead[TypeLease] = []quick.ID{id}
	s.check(t, "dead-lettered: job "+id.String()+" (chaos.lease) dead-lettered itself")
}

func TestCheckCron(t *testing.T) {
	s := newSynth()
	s.cron("chain-0", 1, 2)
	s.h.Records.Done[1].ScheduledAt = s.h.Records.Done[0].ScheduledAt
	s.check(t, "cron occurrence completed twice: chain-0")

	s = newSynth()
	s.cron("chain-0", 1, 2)
	s.h.Cron[0].Alive, s.h.Cron[0].NextID = false, quick.ID{}
	s.h.Queued[TypeCron] = nil
	s.check(t, "cron chain broken: chain-0: no pending occurrence")

	s = newSynth()
	s.cron("chain-0", 1, 2)
	s.h.Queued[TypeCron] = append(s.h.Queued[TypeCron], s.id())
	s.check(t, "cron occurrence queued twice")

	s = newSynth()
	s.cron("chain-0", 1, 2)
	lost := s.id()
	s.h.Events = append(s.h.Events, Event{Kind: EvStart, Worker: "w1", Job: lost, Token: 1, Attempt: 1, Note: "cron"})
	s.check(t, "cron occurrence lost: "+lost.String())
}

// Runs again are counted by what ended the run before; a run after a
// committed completion is a violation.
func TestCheckRunAgain(t *testing.T) {
	s := newSynth()
	id := s.job(TypeCkpt, 1)
	s.h.Events[1].Note = "lease-lost"
	s.h.Events = append(s.h.Events, Event{Kind: EvStart, Worker: "w2", Job: id, Token: 8, Attempt: 2, At: s.t0 + int64(2*time.Second)})
	s.h.Records.Done[0].Token, s.h.Records.Done[0].Worker, s.h.Records.Done[0].Attempt = 8, "w2", 2
	v := s.check(t)
	if v.RunAgain != 1 || v.Reasons["lease-lost"] != 1 {
		t.Errorf("run again %d, reasons %v", v.RunAgain, v.Reasons)
	}
	s.h.Events[1].Note = "ok"
	s.check(t, "run after completion: job "+id.String())
}

// A frozen worker starts a prefetched job when it thaws, after its lease
// lapsed and the next holder completed it: a late start of an earlier
// claim, no violation as long as it wrote nothing.
func TestCheckStalePrefetchedRun(t *testing.T) {
	s := newSynth()
	id := s.job(TypeLease, 1)
	s.h.Events[0].Attempt, s.h.Events[1].Attempt = 2, 2
	s.h.Records.Done[0].Attempt = 2
	s.h.Events = append(s.h.Events,
		Event{Kind: EvStart, Worker: "w4", Job: id, Token: 3, Attempt: 1, At: s.t0 + int64(5*time.Second)},
		Event{Kind: EvEnd, Worker: "w4", Job: id, Token: 3, Attempt: 1, At: s.t0 + int64(6*time.Second), Note: "lease-lost"})
	v := s.check(t)
	if v.RunAgain != 1 || v.Reasons["lease-lost"] != 1 {
		t.Errorf("run again %d, reasons %v", v.RunAgain, v.Reasons)
	}
}

func TestCheckHarnessProblemsFail(t *testing.T) {
	s := newSynth()
	s.h.Problems = []string{"worker w2 exited during the run"}
	s.check(t, "harness: worker w2 exited during the run")
}

// One kind of violation is listed at most maxListed times, then counted.
func TestCheckViolationsAreBounded(t *testing.T) {
	s := newSynth()
	for range maxListed + 5 {
		s.job(TypeLease, 1)
	}
	s.h.Records.Done = nil
	v := s.check(t, "LOST: 5 more not listed (25 in all)")
	if len(v.Violations) != maxListed+1 {
		t.Errorf("%d violations listed, want %d", len(v.Violations), maxListed+1)
	}
}
