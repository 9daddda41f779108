package killcheck

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// ShortBatchJobs is how many jobs the short-batch scenario runs at most:
// what one worker of ShortBatchSlots slots takes in the first two claims of
// one lane visit (a quarter of its capacity of 2×8, then up to its 8 slots
// on the lane it keeps), so that the worker that leases the lane first is
// handed them all and none is left for the other to be handed under a
// short lease of its own (which would block it too).
const ShortBatchJobs = 8

// ShortBatchSlots is the handler slots of each short-batch worker: every
// job handed out starts at once, so every one reports that it blocks.
const ShortBatchSlots = 8

// ShortBatchResumes is what the checker holds the jobs a worker killed
// mid-batch in short-job mode was running against: each must be completed
// by another worker at attempt 2 or later (the takeover counts the dead
// worker's run, quick's hand-out mark), from the step it had reached (0:
// the handler blocks before its first step, Handler.HangShort).
func ShortBatchResumes(victim string, p *Progress) map[quick.ID]Resume {
	out := map[quick.ID]Resume{}
	for id, last := range p.Unfinished() {
		out[id] = Resume{Min: last, Max: last, Killed: victim}
	}
	return out
}

// shortBatch: two worker processes of the task type in short-job mode
// (QueueOptions(LayoutShort)), both with -hang-short, and one producer of
// ShortBatchJobs jobs. The worker that leases the zone's lane first is
// handed every job under its lane lease (no per-job lease, nothing written
// per job) and each blocks; that worker is killed with SIGKILL there,
// holding the whole batch. The other must take the lane over once its
// lease lapses and complete every job with per-job leases, at attempt 2.
func (s *scenario) shortBatch(ctx context.Context) (err error) {
	s.name = "short-batch"
	defer func() { s.name = "" }()
	cluster, stopServer, err := s.serverFor(ctx)
	if err != nil {
		return err
	}
	defer func() { stopServer(err != nil) }()
	e, err := s.open(ctx, cluster, LayoutShort)
	defer s.close(e)
	if err != nil {
		return err
	}
	slots := []string{"-concurrency", fmt.Sprint(ShortBatchSlots), "-hang-short"}
	w1, err := s.startWorker(e, "w1", slots...)
	if err != nil {
		return err
	}
	w2, err := s.startWorker(e, "w2", slots...)
	if err != nil {
		return err
	}
	ready := func() (bool, error) { return w1.Progress().Ready && w2.Progress().Ready, nil }
	if err := s.waitFor(ctx, "both workers to start", ready, w1, w2); err != nil {
		return err
	}
	s.printf("workers w1 (pid %d) and w2 (pid %d) running in short-job mode (zones layout), %d slots each, pointer lease %v",
		w1.pid(), w2.pid(), ShortBatchSlots, e.q.Options().LaneLeaseTime)
	jobs := s.Jobs
	s.Jobs = min(s.Jobs, ShortBatchJobs)
	ids, err := s.produce(ctx, e, 0)
	s.Jobs = jobs
	if err != nil {
		return err
	}

	var victim, survivor *proc
	batch := func() (bool, error) {
		for _, p := range []*proc{w1, w2} {
			if n := len(p.Progress().Hang); n > 0 {
				if other := otherOf(p, w1, w2); len(other.Progress().Hang) > 0 {
					return false, fmt.Errorf("both workers were handed jobs under a short lease (w1 %d, w2 %d): the batch was split",
						len(w1.Progress().Hang), len(w2.Progress().Hang))
				}
				if n == len(ids) {
					victim = p
					return true, nil
				}
			}
		}
		return false, nil
	}
	if err := s.waitFor(ctx, fmt.Sprintf("one worker to be handed all %d jobs under its lane lease", len(ids)), batch, w1, w2); err != nil {
		return err
	}
	survivor = otherOf(victim, w1, w2)
	if err := victim.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if err := victim.wait(30 * time.Second); err == nil {
		return fmt.Errorf("%s exited cleanly after SIGKILL?", victim.name)
	}
	prog := victim.Progress()
	resumes := ShortBatchResumes(victim.name, prog)
	s.printf("SIGKILL %s (pid %d) while it held all %d jobs under its short-job lane lease, each blocked before its first step (%d started, %d completed)",
		victim.name, victim.pid(), len(ids), len(prog.Started), len(prog.Done))

	all := func() (bool, error) {
		if n := len(survivor.Progress().Hang); n > 0 {
			return false, fmt.Errorf("%s was handed %d jobs under a short lease at attempt 1 after the kill: the takeover did not take the lane with per-job leases", survivor.name, n)
		}
		rec, err := s.completed(ctx, e)
		if err != nil {
			return false, err
		}
		return len(rec.Count) >= len(ids), nil
	}
	if err := s.waitFor(ctx, fmt.Sprintf("%s to take the lane over and complete all %d jobs", survivor.name, len(ids)), all, survivor); err != nil {
		return err
	}
	s.printf("all %d jobs have a completion record", len(ids))
	if err := s.stopWorkers(survivor); err != nil {
		return err
	}
	r, err := Check(ctx, e.q, e.keys, Expect{IDs: ids, Resumes: resumes})
	if err != nil {
		return err
	}
	return s.report(r)
}

// otherOf is the one of a and b that is not p.
func otherOf(p, a, b *proc) *proc {
	if p == a {
		return b
	}
	return a
}
