// Command longjob runs a long job that checkpoints after every step, kills
// the worker running it mid-way, and shows another worker resume it from
// its checkpoint instead of starting over.
//
// job.Checkpoint stores the step reached in the job (a key of its own: the
// payload is not rewritten) and extends the job's lease, in one
// transaction. When the worker dies, nothing renews the lease; once it
// lapses the job is runnable again, and the worker that claims it finds
// the last checkpoint in job.Lease.Checkpoint.
//
// It runs in three roles:
//
//	-role both      (default) the scenario, in one process: worker-a runs the
//	                job, is killed during a step (a simulated crash: no release, no
//	                ack, as a crash), and worker-b resumes it once the lease
//	                lapses
//	-role producer  enqueue one job and exit (FoundationDB only)
//	-role worker    run a worker until SIGINT or SIGTERM (FoundationDB only)
//
// The last two let separate processes share a queue on FoundationDB: one
// producer, two workers, and a kill -9 of the worker running the job (see
// examples/README.md).
//
//	go run ./examples/longjob
//	go run -tags fdb ./examples/longjob -cluster-file F -role producer -steps 30
//	go run -tags fdb ./examples/longjob -cluster-file F -role worker
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/examples/internal/ex"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// Import is the long job: Steps steps of StepMs milliseconds each.
type Import struct {
	File   string `json:"file"`
	Steps  int    `json:"steps"`
	StepMs int64  `json:"step_ms"`
}

func (Import) Kind() string { return "import" }

// importer runs imports and notes which worker finished each step.
type importer struct {
	env *ex.Env

	mu   sync.Mutex
	done map[int][]string // step -> the workers that finished it
}

// handler returns the handler. stepping, when not nil, runs before each
// step; the scenario uses it to kill worker-a during a step.
func (im *importer) handler(stepping func(ctx context.Context, holder string, step int) error) worker.Handler[Import] {
	return func(ctx context.Context, job *worker.Job[Import]) error { return im.run(ctx, job, stepping) }
}

func (im *importer) run(ctx context.Context, job *worker.Job[Import], stepping func(context.Context, string, int) error) error {
	who, step := job.Lease.Holder, 0
	if cp := job.Lease.Checkpoint; len(cp) > 0 {
		n, err := strconv.Atoi(string(cp))
		if err != nil {
			return worker.Cancel(fmt.Sprintf("bad checkpoint %q", cp))
		}
		step = n
		im.env.Printf("%s: resuming %s from its checkpoint: step %d of %d done (attempt %d)", who, job.Args.File, step, job.Args.Steps, job.Lease.Attempt)
	} else {
		im.env.Printf("%s: starting %s: %d steps (attempt %d)", who, job.Args.File, job.Args.Steps, job.Lease.Attempt)
	}
	for step < job.Args.Steps {
		if stepping != nil {
			if err := stepping(ctx, who, step+1); err != nil {
				return err
			}
		}
		select { // the work of one step
		case <-im.env.Clock.After(time.Duration(job.Args.StepMs) * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		step++
		if err := job.Checkpoint(ctx, []byte(strconv.Itoa(step))); err != nil {
			return err
		}
		im.mu.Lock()
		im.done[step] = append(im.done[step], who)
		im.mu.Unlock()
		im.env.Printf("%s: step %d/%d done and checkpointed", who, step, job.Args.Steps)
	}
	im.env.Printf("%s: %s finished", who, job.Args.File)
	return nil
}

func main() { ex.Main(run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var (
		role      string
		steps     int
		stepTime  time.Duration
		killAfter int
	)
	f, err := ex.Parse("longjob", args, os.Stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&role, "role", "both", "both (the scenario in one process), producer or worker")
		fs.IntVar(&steps, "steps", 10, "steps of the job")
		fs.DurationVar(&stepTime, "step-time", time.Second, "duration of one step")
		fs.IntVar(&killAfter, "kill-after", 5, "steps worker-a checkpoints before it is killed (role both)")
	})
	if err != nil {
		return err
	}
	if role != "both" && role != "producer" && role != "worker" {
		return fmt.Errorf("unknown -role %q (want both, producer or worker)", role)
	}
	if role != "both" && (f.Embedded || f.Smoke) {
		return fmt.Errorf("-role %s needs -cluster-file and the real clock (no -smoke): the embedded engine and the fake clock live in one process", role)
	}
	env, err := ex.Open(ctx, f, role == "both", stdout, os.Stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	im := &importer{env: env, done: map[int][]string{}}
	opts := worker.HandlerOptions{Lease: quick.MinLease}
	job := Import{File: "catalog.csv", Steps: steps, StepMs: stepTime.Milliseconds()}

	switch role {
	case "producer":
		res, err := env.Queue.Insert(ctx, job, nil)
		if err != nil {
			return err
		}
		env.Printf("producer: enqueued job %s: %s, %d steps of %v", res.ID, job.File, job.Steps, stepTime)
		return nil
	case "worker":
		// A worker process: build, register, run until SIGINT or SIGTERM.
		w, err := worker.New(worker.Config{Queue: env.Queue, ID: f.ID, Logger: env.Log, ShutdownTimeout: f.ShutdownTimeout})
		if err != nil {
			return err
		}
		if err := worker.Register(w, im.handler(nil), opts); err != nil {
			return err
		}
		env.Printf("%s (pid %d): waiting for import jobs; SIGINT or SIGTERM stops it gracefully, SIGKILL as a crash", w.ID(), os.Getpid())
		return w.Run(ctx)
	}
	return scenario(ctx, env, f, im, opts, job, killAfter)
}

func scenario(ctx context.Context, env *ex.Env, f *ex.Flags, im *importer, opts worker.HandlerOptions, job Import, killAfter int) error {
	if killAfter < 1 || killAfter >= job.Steps {
		return fmt.Errorf("-kill-after %d: want 1 to %d", killAfter, job.Steps-1)
	}
	env.Describe(f)

	// worker-a is killed during step killAfter+1.
	killNow := make(chan struct{})
	killDuring := func(ctx context.Context, who string, step int) error {
		if step == killAfter+1 {
			env.Printf("%s: working on step %d... (and killed now)", who, step)
			close(killNow)
			<-ctx.Done()
			return context.Cause(ctx)
		}
		return nil
	}
	wa, err := env.NewWorker("worker-a")
	if err != nil {
		return err
	}
	if err := worker.Register(wa, im.handler(killDuring), opts); err != nil {
		return err
	}
	a := ex.Start(wa)
	defer a.Abort() // a no-op once killed

	res, err := env.Queue.Insert(ctx, job, nil)
	if err != nil {
		return err
	}
	env.Printf("producer: enqueued job %s: %s, %d steps", ex.Short(res.ID), job.File, job.Steps)
	select {
	case <-killNow:
	case <-time.After(time.Minute):
		return fmt.Errorf("worker-a never reached step %d", killAfter+1)
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := a.Kill(); err != nil {
		return err
	}
	info, err := env.Queue.Get(ctx, res.ID)
	if err != nil {
		return err
	}
	env.Printf("worker-a killed: job %s stays leased by %s until its lease lapses (%v from now)",
		ex.Short(res.ID), info.Holder, info.RunAt.Sub(env.Clock.Now()).Round(100*time.Millisecond))

	wb, err := env.NewWorker("worker-b")
	if err != nil {
		return err
	}
	resumed := -1 // the step worker-b started after
	noteResume := func(_ context.Context, _ string, step int) error {
		im.mu.Lock()
		defer im.mu.Unlock()
		if resumed < 0 {
			resumed = step - 1
		}
		return nil
	}
	if err := worker.Register(wb, im.handler(noteResume), opts); err != nil {
		return err
	}
	b := ex.Start(wb)
	defer b.Abort()
	env.Printf("worker-b started: the job is not runnable until worker-a's lease lapses")
	if err := env.PassUntil(ctx, info.RunAt.Add(100*time.Millisecond)); err != nil {
		return err
	}
	if err := env.WaitFor(ctx, "the job to finish", func() (bool, error) { return env.JobsGone(ctx, res.ID) }); err != nil {
		return err
	}
	if err := b.Stop(ctx); err != nil {
		return err
	}

	// Every step done once: 1..killAfter by worker-a, the rest by worker-b.
	im.mu.Lock()
	defer im.mu.Unlock()
	if err := ex.Check(resumed == killAfter, "worker-b resumed after step %d, want %d (worker-a's last checkpoint)", resumed, killAfter); err != nil {
		return err
	}
	for s := 1; s <= job.Steps; s++ {
		want := "worker-b"
		if s <= killAfter {
			want = "worker-a"
		}
		by := im.done[s]
		if err := ex.Check(len(by) == 1 && by[0] == want, "step %d done by %v, want once by %s", s, by, want); err != nil {
			return err
		}
	}
	env.Printf("OK: worker-b resumed from step %d; steps 1-%d ran on worker-a, %d-%d on worker-b, none twice",
		resumed, killAfter, killAfter+1, job.Steps)
	return nil
}
