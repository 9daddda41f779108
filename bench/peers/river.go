package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// River's own benchmark (cmd/river/riverbench/river_bench.go, River
// v0.51) sets these fetch settings: "Much better than the client's default
// values". The defaults are FetchCooldown 100 ms and FetchPollInterval 1 s,
// which cap a client near MaxWorkers per 100 ms.
const (
	riverBenchFetchCooldown     = 2 * time.Millisecond
	riverBenchFetchPollInterval = 20 * time.Millisecond
)

// riverSystem is River with the pgx v5 driver on Postgres. Every workload
// starts from a truncated river_job table, as River's benchmark does; a new
// client is made for each worker start.
type riverSystem struct {
	name        string
	benchFetch  bool // River's benchmark fetch settings instead of the defaults
	pool        *pgxpool.Pool
	postmaster  int
	inserter    *river.Client[pgx.Tx]
	worker      *river.Client[pgx.Tx]
	log         *slog.Logger
	onStartFunc startFunc
}

// peerWorker is River's handler: a no-op that records its start.
type peerWorker struct {
	river.WorkerDefaults[peerArgs]
	sys *riverSystem
}

func (w *peerWorker) Work(ctx context.Context, job *river.Job[peerArgs]) error {
	w.sys.onStartFunc(job.Args.T, time.Now().UnixNano())
	return nil
}

// prepareRiver migrates the database with rivermigrate (a no-op when it
// is current) and finds the postmaster, whose process tree is the server side
// of River's CPU.
func prepareRiver(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return 0, fmt.Errorf("rivermigrate: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return 0, fmt.Errorf("rivermigrate up: %w", err)
	}
	var backend int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, fmt.Errorf("postgres backend pid: %w", err)
	}
	// A backend's parent is the postmaster; this only works when Postgres
	// runs on this machine, which CPU accounting needs anyway.
	return parentPID(backend)
}

func newRiver(name string, pool *pgxpool.Pool, postmaster int, benchFetch bool) (*riverSystem, error) {
	s := &riverSystem{name: name, benchFetch: benchFetch, pool: pool, postmaster: postmaster, log: quietLogger()}
	// The inserting client has no queues: River's insert-only client.
	ins, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: s.log})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	s.inserter = ins
	return s, nil
}

func (s *riverSystem) Name() string      { return s.name }
func (s *riverSystem) ServerPIDs() []int { return []int{s.postmaster} }

func (s *riverSystem) Reset(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return fmt.Errorf("truncate river_job: %w", err)
	}
	return nil
}

func (s *riverSystem) EnqueueBatch(ctx context.Context, stamps []int64) error {
	params := make([]river.InsertManyParams, len(stamps))
	for i, t := range stamps {
		params[i] = river.InsertManyParams{Args: peerArgs{T: t}}
	}
	_, err := s.inserter.InsertMany(ctx, params)
	return err
}

func (s *riverSystem) Enqueue(ctx context.Context, stamp int64) error {
	_, err := s.inserter.Insert(ctx, peerArgs{T: stamp}, nil)
	return err
}

func (s *riverSystem) Start(ctx context.Context, slots int, onStart startFunc) error {
	s.onStartFunc = onStart
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &peerWorker{sys: s}); err != nil {
		return err
	}
	cfg := &river.Config{
		Logger:  s.log,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: slots}},
		Workers: workers,
	}
	if s.benchFetch {
		cfg.FetchCooldown = riverBenchFetchCooldown
		cfg.FetchPollInterval = riverBenchFetchPollInterval
	}
	c, err := river.NewClient(riverpgxv5.New(s.pool), cfg)
	if err != nil {
		return fmt.Errorf("river client: %w", err)
	}
	if err := c.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("river start: %w", err)
	}
	s.worker = c
	return nil
}

func (s *riverSystem) Stop(ctx context.Context) error {
	if s.worker == nil {
		return nil
	}
	err := s.worker.Stop(ctx)
	s.worker = nil
	return err
}

func (s *riverSystem) Close() error { return nil } // the pool is shared and closed by main
