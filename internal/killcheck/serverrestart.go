package killcheck

import (
	"context"
	"fmt"
	"maps"
	"syscall"
	"time"
)

// serverRestart: its own fdbserver (ssd engine), two workers, one
// producer; the server is killed with SIGKILL once a third of the jobs are
// complete and some are mid-run, and started again Downtime later on the same data
// directory; every job must be completed exactly once, and the completions
// made before the kill must have survived it.
func (s *scenario) serverRestart(ctx context.Context) (err error) {
	s.name = "server-restart"
	defer func() { s.name = "" }()
	if s.FDBBin == "" {
		return fmt.Errorf("needs -fdb-bin (or QUICKFDB_FDB_BIN): the directory holding fdbserver and fdbcli")
	}
	srv, err := s.newServer(s.FDBBin, s.DataDir)
	if err != nil {
		return err
	}
	defer func() { srv.stop(s.Keep || err != nil) }()
	if err := srv.start(); err != nil {
		return err
	}
	if err := srv.configure(ctx); err != nil {
		return err
	}
	s.printf("fdbserver (pid %d) on %s: configure new single ssd done; data in %s", srv.p.pid(), srv.args[1], srv.dir)

	e, err := s.open(ctx, srv.clusterFile, LayoutZones)
	defer s.close(e)
	if err != nil {
		return err
	}
	w1, err := s.startWorker(e, "w1")
	if err != nil {
		return err
	}
	w2, err := s.startWorker(e, "w2")
	if err != nil {
		return err
	}
	ready := func() (bool, error) { return w1.Progress().Ready && w2.Progress().Ready, nil }
	if err := s.waitFor(ctx, "both workers to start", ready, w1, w2); err != nil {
		return err
	}
	s.printf("workers w1 (pid %d) and w2 (pid %d) running", w1.pid(), w2.pid())
	ids, err := s.produce(ctx, e, 0)
	if err != nil {
		return err
	}

	// Kill the server once a third are complete and some run.
	var before *Records
	third := func() (bool, error) {
		rec, err := s.completed(ctx, e)
		if err != nil {
			return false, err
		}
		running := len(w1.Progress().Unfinished()) + len(w2.Progress().Unfinished())
		before = rec
		if len(rec.Count) >= len(ids) {
			return false, fmt.Errorf("all %d jobs completed before the server could be killed mid-run: raise -jobs or -steps", len(ids))
		}
		return len(rec.Count)*3 >= len(ids) && running > 0, nil
	}
	if err := s.waitFor(ctx, "a third of the jobs to complete", third, w1, w2); err != nil {
		return err
	}
	running := len(w1.Progress().Unfinished()) + len(w2.Progress().Unfinished())
	if err := srv.p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	_ = srv.p.wait(30 * time.Second)
	s.printf("SIGKILL fdbserver (pid %d) with %d of %d jobs complete and %d mid-run", srv.p.pid(), len(before.Count), len(ids), running)
	select {
	case <-time.After(s.Downtime):
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := srv.start(); err != nil {
		return err
	}
	s.printf("fdbserver started again (pid %d) on the same data directory after %v down", srv.p.pid(), s.Downtime)

	all := func() (bool, error) {
		rec, err := s.completed(ctx, e)
		if err != nil {
			return false, nil // the server may still be recovering
		}
		return len(rec.Count) >= len(ids), nil
	}
	if err := s.waitFor(ctx, fmt.Sprintf("all %d jobs to complete", len(ids)), all, w1, w2, srv.p); err != nil {
		return err
	}
	s.printf("all %d jobs have a completion record", len(ids))
	if err := s.stopWorkers(w1, w2); err != nil {
		return err
	}
	r, err := Check(ctx, e.q, e.keys, Expect{IDs: ids, Before: maps.Clone(before.Done)})
	if err != nil {
		return err
	}
	return s.report(r)
}
