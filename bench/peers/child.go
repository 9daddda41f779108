package main

// Child mode: `peers -child-worker ROW [connection flags]` is one worker
// process of procs.go. It opens the row's queue, reports recReady on fd 3,
// and on cmdStart (stdin) starts the row's worker with the slots given and
// reports recStarted; each handler start is then reported as a recJob
// record. When stdin closes (or on SIGINT/SIGTERM) it stops the worker
// gracefully, flushes its reports and exits: 0 after a clean stop.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const childFlag = "-child-worker"

// Reports are batched: a handler start appends a record to a buffer under a
// mutex, and the buffer is written to the pipe reportEvery after its first
// record (or at once when it reaches reportBatch bytes). An idle child
// writes nothing and wakes for nothing.
const (
	reportEvery = 10 * time.Millisecond
	reportBatch = 4096
)

// childPool is a River worker process's share of -pg-pool connections, at
// least 4 (River's producer, completer and leader election each hold one at
// times), so that N processes open about as many connections as one.
func childPool(pgPool, procs int) int { return max(4, (pgPool+procs-1)/procs) }

func runChild(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("peers worker process", flag.ContinueOnError)
	fs.SetOutput(stderr)
	row := fs.String("child-worker", "", "row whose worker to run")
	pgDSN := fs.String("pg-dsn", "", "Postgres for River")
	pgPool := fs.Int("pg-pool", 5, "Postgres connections")
	redisAddr := fs.String("redis-addr", "", "Redis for Asynq")
	clusterFile := fs.String("fdb-cluster-file", "", "FoundationDB cluster file")
	spacePID := fs.Int64("space-pid", 0, "quickfdb: the parent's pid in the run's subspace")
	spaceRun := fs.Int64("space-run", 0, "quickfdb: the run number in the run's subspace")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "peers worker process %d (%s): %v\n", os.Getpid(), *row, err)
		return 1
	}
	out := os.NewFile(3, "report")
	if out == nil {
		return fail(errors.New("no report pipe on fd 3"))
	}
	sys, cleanup, err := openChild(ctx, *row, *pgDSN, *pgPool, *redisAddr, *clusterFile, *spacePID, *spaceRun)
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	rep := newReporter(out)
	rep.add(recReady, int64(os.Getpid()), 0, true)

	cmds := make(chan record)
	go readCommands(os.Stdin, cmds)
	started := false
	var runErr error
loop:
	for {
		select {
		case c, ok := <-cmds:
			if !ok {
				break loop // stdin closed: stop
			}
			if c.tag != cmdStart || started {
				runErr = fmt.Errorf("unexpected command %q", c.tag)
				break loop
			}
			if err := sys.Start(ctx, int(c.x), rep.job); err != nil {
				runErr = err
				break loop
			}
			started = true
			rep.add(recStarted, 0, 0, true)
		case <-ctx.Done():
			break loop
		}
	}
	if started {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), childStopTimeout-5*time.Second)
		runErr = errors.Join(runErr, sys.Stop(stopCtx))
		cancel()
	}
	runErr = errors.Join(runErr, rep.close())
	if runErr != nil {
		return fail(runErr)
	}
	return 0
}

// openChild opens the row's queue as the parent did: the same servers, and
// for quickfdb the subspace of the parent's current run. The cleanup
// releases connections only: the queue's contents are the parent's.
func openChild(ctx context.Context, row, pgDSN string, pgPool int, redisAddr, clusterFile string, spacePID, spaceRun int64) (system, func(), error) {
	switch row {
	case "quickfdb-fdb", "quickfdb-fdb-short":
		s, err := newQuickFDB(clusterFile, nil, row == "quickfdb-fdb-short")
		if err != nil {
			return nil, nil, err
		}
		if err := s.attach(ctx, spacePID, spaceRun); err != nil {
			return nil, nil, err
		}
		return s, func() {}, nil // not s.Close: that clears the parent's subspace
	case "river-default", "river-bench":
		cfg, err := pgxpool.ParseConfig(pgDSN)
		if err != nil {
			return nil, nil, fmt.Errorf("-pg-dsn: %w", err)
		}
		cfg.MaxConns = int32(pgPool)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: %w", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("postgres: %w", err)
		}
		s, err := newRiver(row, pool, 0, row == "river-bench")
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return s, pool.Close, nil
	case "asynq":
		s, err := newAsynq(ctx, redisAddr)
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	}
	return nil, nil, fmt.Errorf("row %q cannot run in worker processes", row)
}

// readCommands passes stdin's commands to cmds and closes it at EOF.
func readCommands(r io.Reader, cmds chan<- record) {
	defer close(cmds)
	br := bufio.NewReader(r)
	var b [recordSize]byte
	for {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return
		}
		tag, x, y := parseRecord(b[:])
		cmds <- record{tag, x, y}
	}
}

// reporter batches records onto the report pipe.
type reporter struct {
	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	pending bool // a flush is scheduled
	timer   *time.Timer
	err     error // the first failed write; later records are dropped
}

func newReporter(w io.Writer) *reporter {
	r := &reporter{w: w, buf: make([]byte, 0, reportBatch+recordSize)}
	r.timer = time.AfterFunc(time.Hour, r.tick)
	r.timer.Stop()
	return r
}

// job is the worker's startFunc.
func (r *reporter) job(stamp, at int64) { r.add(recJob, stamp, at, false) }

func (r *reporter) add(tag byte, x, y int64, now bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = appendRecord(r.buf, tag, x, y)
	switch {
	case now || len(r.buf) >= reportBatch:
		r.flushLocked()
	case !r.pending:
		r.pending = true
		r.timer.Reset(reportEvery)
	}
}

func (r *reporter) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = false
	r.flushLocked()
}

func (r *reporter) flushLocked() {
	if len(r.buf) > 0 && r.err == nil {
		_, r.err = r.w.Write(r.buf)
	}
	r.buf = r.buf[:0]
}

// close flushes what is buffered and closes the pipe if it is a Closer.
func (r *reporter) close() error {
	r.timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
	err := r.err
	if c, ok := r.w.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	r.err = errors.New("reporter closed")
	return err
}
