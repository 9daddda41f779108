package chaos

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/quickfdb/quickfdb/internal/harness/procbench"
	"github.com/quickfdb/quickfdb/kv"
)

// InProcess starts worker children as goroutines of this process on db
// (memkv, whose database lives in one process): the run's logic without
// processes, for `go test` and `quickbench chaos` without a cluster. Stop
// and Kill both end the worker's context (a graceful stop).
func InProcess(db kv.Database, log *slog.Logger) procbench.Spawner {
	return inProcess(db, log, &freezer{})
}

// inProcess is InProcess with each worker on a clock of fr, which can
// freeze it.
func inProcess(db kv.Database, log *slog.Logger, fr *freezer) procbench.Spawner {
	return func(ctx context.Context, name string, args []string) (procbench.Child, error) {
		a, err := ParseWorkerArgs(args, io.Discard)
		if err != nil {
			return nil, err
		}
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		pr, pw := io.Pipe()
		g := &goChild{out: pr, cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(g.done)
			g.err = runWorker(wctx, a, db, pw, log.With("worker", a.ID), fr.clock(a.ID))
			pw.Close()
		}()
		return g, nil
	}
}

type goChild struct {
	out    *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func (g *goChild) Output() io.Reader { return g.out }
func (g *goChild) Stop() error       { g.cancel(); return nil }
func (g *goChild) Kill()             { g.cancel() }
func (g *goChild) Wait() (time.Duration, error) {
	<-g.done
	return 0, g.err
}
func (g *goChild) CPUSoFar() (time.Duration, bool) { return 0, false }
