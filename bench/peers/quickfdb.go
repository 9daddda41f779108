package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// quickSystem is quickfdb on one engine. On memkv every workload gets a
// fresh in-memory database; on FoundationDB a fresh subspace, cleared when
// the next workload starts and at Close.
type quickSystem struct {
	name    string
	memkv   bool                        // in this process's memory, not FoundationDB
	open    func() (kv.Database, error) // a fresh database (memkv) or the same one (FDB)
	fdbPIDs []int
	log     *slog.Logger
	// opts are the queue's options besides its logger: the layout and the
	// task type's short-job mode of the zones rows.
	opts quick.Options

	db    kv.Database
	space tuple.Subspace
	runs  int
	q     *quick.Queue
	w     *worker.Worker
	done  chan error
}

func newQuickMem(name string, lat memkv.Latency, seed int64) *quickSystem {
	return &quickSystem{
		name:  name,
		memkv: true,
		open: func() (kv.Database, error) {
			return memkv.Open(memkv.Options{Latency: lat, Seed: seed}), nil
		},
		log: quietLogger(),
	}
}

// newQuickFDB opens FoundationDB through fdbkv, which needs the binary built
// with -tags fdb; without it fdbkv.Open returns fdbkv.ErrNotBuilt.
// With short set the peer task type runs in short-job mode.
func newQuickFDB(clusterFile string, pids []int, short bool) (*quickSystem, error) {
	db, err := fdbkv.Open(clusterFile)
	if err != nil {
		return nil, fmt.Errorf("quickfdb on FoundationDB: %w", err)
	}
	name := "quickfdb, FoundationDB"
	if short {
		name = "quickfdb short-job, FoundationDB"
	}
	s := &quickSystem{
		name:    name,
		open:    func() (kv.Database, error) { return db, nil },
		fdbPIDs: pids,
		log:     quietLogger(),
	}
	return s.zones(short), nil
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// zones names the system as the zones layout (the one layout since issue
// 21; the name keeps the reports comparable), the peer task type in
// short-job mode when short is set.
func (s *quickSystem) zones(short bool) *quickSystem {
	if short {
		s.opts.TaskTypes = map[string]quick.TaskTypeOptions{peerArgs{}.Kind(): {ShortJobs: true}}
	}
	return s
}

func (s *quickSystem) Name() string { return s.name }

func (s *quickSystem) ServerPIDs() []int { return s.fdbPIDs }

func (s *quickSystem) clear(ctx context.Context) error {
	if s.db == nil || s.q == nil {
		return nil
	}
	b, e := s.space.Range()
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.KeyRange{Begin: b, End: e})
		return nil
	})
}

func (s *quickSystem) Reset(ctx context.Context) error {
	if err := s.clear(ctx); err != nil {
		return fmt.Errorf("clear the previous run's subspace: %w", err)
	}
	s.runs++
	// A subspace per run and per process: runs on FDB never see an earlier
	// run's keys, even one that was killed before it cleared them.
	return s.attach(ctx, int64(os.Getpid()), int64(s.runs))
}

// attach opens the queue in run's subspace of the benchmark process pid.
// Reset uses it with its own pid; a worker process (child.go) with its
// parent's, so that both open the same queue.
func (s *quickSystem) attach(ctx context.Context, pid, run int64) error {
	db, err := s.open()
	if err != nil {
		return err
	}
	s.db = db
	s.space = tuple.FromTuple(tuple.Tuple{"quickfdb-peers", pid, run})
	opts := s.opts
	opts.Logger = s.log
	s.q, err = quick.Open(ctx, db, s.space, opts)
	if err != nil {
		return fmt.Errorf("quick.Open: %w", err)
	}
	return nil
}

// runArgs are the flags with which a worker process attaches to the queue
// the last Reset opened.
func (s *quickSystem) runArgs() []string {
	return []string{"-space-pid", strconv.Itoa(os.Getpid()), "-space-run", strconv.Itoa(s.runs)}
}

func (s *quickSystem) EnqueueBatch(ctx context.Context, stamps []int64) error {
	jobs := make([]quick.NewJob, len(stamps))
	for i, t := range stamps {
		j, err := quick.ArgsJob(peerArgs{T: t}, nil)
		if err != nil {
			return err
		}
		jobs[i] = j
	}
	_, err := s.q.Enqueue(ctx, jobs...)
	return err
}

func (s *quickSystem) Enqueue(ctx context.Context, stamp int64) error {
	_, err := s.q.Insert(ctx, peerArgs{T: stamp}, nil)
	return err
}

func (s *quickSystem) Start(ctx context.Context, slots int, onStart startFunc) error {
	w, err := worker.New(worker.Config{Queue: s.q, Logger: s.log})
	if err != nil {
		return err
	}
	err = worker.Register(w, func(ctx context.Context, job *worker.Job[peerArgs]) error {
		onStart(job.Args.T, time.Now().UnixNano())
		return nil
	}, worker.HandlerOptions{Concurrency: slots})
	if err != nil {
		return err
	}
	s.w = w
	s.done = make(chan error, 1)
	go func() { s.done <- w.Run(context.WithoutCancel(ctx)) }()
	return nil
}

func (s *quickSystem) Stop(ctx context.Context) error {
	if s.w == nil {
		return nil
	}
	// Stop returns Run's outcome once Run has returned.
	err := s.w.Stop(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
		err = errors.Join(err, ctx.Err())
	case <-time.After(30 * time.Second):
		err = errors.Join(err, errors.New("quickfdb worker did not return from Run"))
	}
	s.w = nil
	return err
}

func (s *quickSystem) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.clear(ctx)
}
