package killcheck

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// serverFor returns the cluster file of the server a scenario runs
// against: -cluster-file's, or with only -fdb-bin one it starts (configure
// new single ssd) and stop stops (keeping its directory with Keep or when
// the scenario failed).
func (s *scenario) serverFor(ctx context.Context) (cluster string, stop func(failed bool), err error) {
	if s.ClusterFile != "" {
		return s.ClusterFile, func(bool) {}, nil
	}
	if s.FDBBin == "" {
		return "", nil, fmt.Errorf("needs a server: -cluster-file (or FDB_CLUSTER_FILE), or -fdb-bin to start one")
	}
	srv, err := s.newServer(s.FDBBin, "")
	if err != nil {
		return "", nil, err
	}
	stop = func(failed bool) { srv.stop(s.Keep || failed) }
	if err := srv.start(); err != nil {
		stop(true)
		return "", nil, err
	}
	if err := srv.configure(ctx); err != nil {
		stop(true)
		return "", nil, err
	}
	s.printf("no -cluster-file: started fdbserver (pid %d) on %s, configure new single ssd; data in %s", srv.p.pid(), srv.args[1], srv.dir)
	return srv.clusterFile, stop, nil
}

// workerKill: two workers, one producer; the worker running the first job
// is killed with SIGKILL while that job blocks right after checkpointing
// step hangAt; the other worker must finish everything.
func (s *scenario) workerKill(ctx context.Context) (err error) {
	s.name = "worker-kill"
	defer func() { s.name = "" }()
	cluster, stopServer, err := s.serverFor(ctx)
	if err != nil {
		return err
	}
	defer func() { stopServer(err != nil) }()
	e, err := s.open(ctx, cluster, LayoutZones)
	defer s.close(e)
	if err != nil {
		return err
	}
	hangAt := s.Steps / 2
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
	s.printf("workers w1 (pid %d) and w2 (pid %d) running, 4 slots each, %v leases", w1.pid(), w2.pid(), quick.MinLease)
	ids, err := s.produce(ctx, e, hangAt)
	if err != nil {
		return err
	}
	target := ids[0]

	var victim, survivor *proc
	hung := func() (bool, error) {
		for _, p := range []*proc{w1, w2} {
			if _, ok := p.Progress().Hang[target]; ok {
				victim = p
				return true, nil
			}
		}
		return false, nil
	}
	if err := s.waitFor(ctx, fmt.Sprintf("job %s to checkpoint step %d", target, hangAt), hung, w1, w2); err != nil {
		return err
	}
	survivor = w1
	if victim == w1 {
		survivor = w2
	}
	if err := victim.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if err := victim.wait(30 * time.Second); err == nil {
		return fmt.Errorf("%s exited cleanly after SIGKILL?", victim.name)
	}
	prog := victim.Progress()
	resumes := map[quick.ID]Resume{}
	for id, last := range prog.Unfinished() {
		r := Resume{Min: last, Max: min(last+1, s.Steps), Killed: victim.name}
		if id == target {
			r.Max = last
		}
		resumes[id] = r
	}
	s.printf("SIGKILL %s (pid %d) while job %s blocked after checkpointing step %d of %d; it held %d jobs mid-run, had completed %d",
		victim.name, victim.pid(), target, hangAt, s.Steps, len(resumes), len(prog.Done))

	all := func() (bool, error) {
		rec, err := s.completed(ctx, e)
		if err != nil {
			return false, err
		}
		return len(rec.Count) >= len(ids), nil
	}
	if err := s.waitFor(ctx, fmt.Sprintf("%s to complete all %d jobs", survivor.name, len(ids)), all, survivor); err != nil {
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
