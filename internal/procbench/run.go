package procbench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/workermain"
)

// Run drains cfg.Jobs jobs with each process count of cfg.Procs in turn,
// on db (the database of cfg.ClusterFile, which the children open too),
// and writes each row to out as it finishes, under WriteHeader's columns.
// spawn starts the children; log gets the progress.
func Run(ctx context.Context, db kv.Database, cfg Config, spawn Spawner, out io.Writer, log *slog.Logger) ([]Row, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	root, err := workermain.ParseSubspace(cfg.Subspace)
	if err != nil {
		return nil, err
	}
	ps := payloads(cfg.Jobs, cfg.Payload, cfg.Duration, cfg.Seed)
	WriteHeader(out)
	var rows []Row
	for _, n := range cfg.Procs {
		d := &drain{cfg: cfg, n: n, db: db, root: root, spawn: spawn, log: log.With("procs", n), changed: make(chan struct{}, 1)}
		row, err := d.run(ctx, ps)
		if err != nil {
			return rows, fmt.Errorf("procbench: %d processes: %w", n, err)
		}
		row.Write(out)
		rows = append(rows, row)
	}
	if !cfg.Keep {
		if err := clearSpace(ctx, db, root); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// drain is one process count's run.
type drain struct {
	cfg   Config
	n     int
	db    kv.Database
	root  tuple.Subspace
	spawn Spawner
	log   *slog.Logger

	q        *quick.Queue
	counter  []byte
	children []*child
	// changed is kicked by every report line and every child's exit.
	changed chan struct{}
}

func (d *drain) run(ctx context.Context, ps [][]byte) (row Row, err error) {
	if err := clearSpace(ctx, d.db, d.root); err != nil {
		return Row{}, err
	}
	qs, counter := spaces(d.root)
	d.counter = counter
	opts, err := queueOptions(d.cfg.Layout, d.cfg.ZoneLanes)
	if err != nil {
		return Row{}, err
	}
	opts.Logger = d.log
	if d.q, err = quick.Open(ctx, d.db, qs, opts); err != nil {
		return Row{}, fmt.Errorf("open the queue: %w", err)
	}
	// Paused before the fill, so that no child claims before all are up.
	if err := d.q.Pause(ctx, TaskType); err != nil {
		return Row{}, err
	}
	t0 := time.Now()
	if err := fill(ctx, d.q, ps, d.cfg.FillBatch); err != nil {
		return Row{}, err
	}
	d.log.Info("procs: backlog filled", "jobs", len(ps), "took", time.Since(t0).Round(time.Millisecond))

	defer func() {
		if err != nil {
			d.killAll()
		}
	}()
	for i := range d.n {
		if err := d.start(ctx, fmt.Sprintf("p%02d", i)); err != nil {
			return Row{}, err
		}
	}
	if err := d.waitReady(ctx, time.Minute); err != nil {
		return Row{}, err
	}
	d.log.Info("procs: every child is up; settling", "settle", d.cfg.Settle)
	select {
	case <-time.After(d.cfg.Settle):
	case <-ctx.Done():
		return Row{}, ctx.Err()
	}

	before, beforeKnown := d.cpuSoFar()
	start := time.Now()
	if err := d.q.Resume(ctx, TaskType); err != nil {
		return Row{}, err
	}
	if err := d.waitDrained(ctx); err != nil {
		return Row{}, err
	}
	wall := time.Since(start)
	d.log.Info("procs: drained; stopping the children", "wall", wall.Round(time.Millisecond))

	cpu, err := d.stopAll()
	if err != nil {
		return Row{}, err
	}
	row, err = d.row(ctx, wall, cpu)
	if err != nil {
		return Row{}, err
	}
	row.RunCPUPer1k = -1
	if beforeKnown {
		row.RunCPUPer1k = (cpu - before).Seconds() * 1000 / float64(d.cfg.Jobs)
	}
	return row, nil
}

// fill enqueues the backlog, batch jobs per Enqueue call: each call is a
// bounded transaction (Enqueue splits further at about 512 KB).
func fill(ctx context.Context, q *quick.Queue, ps [][]byte, batch int) error {
	jobs := newJobs(ps)
	for len(jobs) > 0 {
		b := jobs[:min(batch, len(jobs))]
		jobs = jobs[len(b):]
		if _, err := q.Enqueue(ctx, b...); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
	}
	return nil
}

// waitDrained waits until every job has completed: the counter key
// reaches the backlog (Complete "with"), or the children's progress lines
// add up to it ("ack").
func (d *drain) waitDrained(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	// "ack" follows the report lines as they come; "with" polls the
	// counter at its own pace (and notices an exited child at the next).
	changed := d.changed
	if d.cfg.Complete == CompleteWith {
		changed = nil
	}
	lastN, lastChange := int64(-1), time.Now()
	for {
		var n int64
		if d.cfg.Complete == CompleteWith {
			var err error
			if n, err = d.readCounter(ctx); err != nil {
				return err
			}
		} else {
			n = d.progress()
		}
		if n >= int64(d.cfg.Jobs) {
			return nil
		}
		if n != lastN {
			lastN, lastChange = n, time.Now()
		} else if d.cfg.Complete == CompleteAck && time.Since(lastChange) > stallCheck {
			// A completion the children could not count (an ack whose
			// commit came back unknown but applied) would leave the sum
			// short for good: if the queue is empty, the drain is over
			// and the row's check reports the difference.
			lastChange = time.Now()
			if left, err := jobsLeft(ctx, d.q, d.cfg.Layout); err != nil {
				return err
			} else if !left {
				return nil
			}
		}
		if c := d.exited(); c != nil {
			return fmt.Errorf("child %s exited mid-drain (%d of %d jobs completed): %w", c.name, n, d.cfg.Jobs, c.exitErr())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the drain (%d of %d jobs completed): %w", n, d.cfg.Jobs, ctx.Err())
		case <-tick.C:
		case <-changed:
		}
	}
}

func (d *drain) readCounter(ctx context.Context) (int64, error) {
	var n int64
	err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get(d.counter).Get()
		if err != nil {
			return err
		}
		n = 0
		if len(v) == 8 {
			n = int64(binary.LittleEndian.Uint64(v))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read the completion counter: %w", err)
	}
	return n, nil
}

// row checks the drain's outcome and makes its row.
func (d *drain) row(ctx context.Context, wall, cpu time.Duration) (Row, error) {
	r := Row{Procs: d.n, Jobs: d.cfg.Jobs, Layout: d.cfg.Layout, Complete: d.cfg.Complete, WallS: wall.Seconds(), CPUS: cpu.Seconds()}
	var sum int64
	for _, c := range d.children {
		l := c.exitLine()
		if l == nil || l.KV == nil || l.Worker == nil {
			return Row{}, fmt.Errorf("child %s printed no exit line", c.name)
		}
		sum += l.Completed
		r.KV = r.KV.Add(*l.KV)
		r.LeaseLost += l.Worker.LeaseLost
		r.Conflicts += l.Worker.Conflicts
	}
	r.Completed = sum
	if d.cfg.Complete == CompleteWith {
		n, err := d.readCounter(ctx)
		if err != nil {
			return Row{}, err
		}
		r.Completed = n
	}
	if r.Completed != int64(d.cfg.Jobs) {
		return Row{}, fmt.Errorf("%d completions of %d jobs (the children reported %d)", r.Completed, d.cfg.Jobs, sum)
	}
	if err := checkEmpty(ctx, d.q, d.cfg.Layout); err != nil {
		return Row{}, err
	}
	r.JobsPerSec = float64(d.cfg.Jobs) / wall.Seconds()
	r.CPUPer1k = r.CPUS * 1000 / float64(d.cfg.Jobs)
	r.PerJob = r.KV.Per(int64(d.cfg.Jobs))
	return r, nil
}

// stallCheck is how long the children's count may stand still in "ack"
// mode before the parent looks whether the queue is empty anyway.
const stallCheck = 2 * time.Second

// checkEmpty fails unless the queue holds no job of the task type and no
// dead letter.
func checkEmpty(ctx context.Context, q *quick.Queue, layout string) error {
	left, err := jobsLeft(ctx, q, layout)
	if err != nil {
		return err
	}
	dead, err := q.DeadCount(ctx, TaskType)
	if err != nil {
		return fmt.Errorf("count dead letters: %w", err)
	}
	if left || dead > 0 {
		return fmt.Errorf("after the drain the queue still lists jobs (%v) or dead letters (%d)", left, dead)
	}
	return nil
}

// jobsLeft tells whether the queue lists a job of the task type in its
// zone (the jobs have no tenant): one short listing.
func jobsLeft(ctx context.Context, q *quick.Queue, _ string) (bool, error) {
	zp, err := q.ZoneJobs(ctx, quick.ZoneJobsOptions{TaskType: TaskType, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("list the zone: %w", err)
	}
	return len(zp.Jobs) > 0, nil
}

func clearSpace(ctx context.Context, db kv.Database, root tuple.Subspace) error {
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.PrefixRange(root.Bytes()))
		return nil
	})
	if err != nil {
		return fmt.Errorf("procbench: clear the run's subspace: %w", err)
	}
	return nil
}

var errNoExit = errors.New("exited before its report")
