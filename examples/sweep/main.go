// Command sweep deletes expired data with a recurring sweep that fans out
// one cleanup job per expired item: the deletion flow Tigris describes for
// QuiCK on FoundationDB.
//
// Deleting an object writes a tombstone, keyed by the time its retention
// ends, and leaves the object's data blocks in place. Then:
//
//  1. A recurring sweep (a cron schedule, "@every 1m": no cron service, each
//     run's completion enqueues the next) lists the tombstones whose
//     retention has ended and, in one transaction, enqueues a cleanup job
//     for each (EnqueueTx). Each job has a unique key naming its
//     tombstone, so sweeps that overlap (a slow one and the next, a rerun
//     after a worker died, an operator's manual sweep) never enqueue a
//     second cleanup while the first is pending or running.
//  2. Each cleanup job checks again that its tombstone is there, and
//     deletes it and the object's blocks in the transaction that completes
//     the job (job.CompleteWith): the deletion happens exactly once.
//
// The smoke run jumps its fake clock from one sweep to the next, so three
// minutes of schedule take a second; on the real clock (-cluster-file
// without -smoke) the schedule is "@every 5s" unless -every says otherwise.
//
//	go run ./examples/sweep
//	go run -tags fdb ./examples/sweep -cluster-file /etc/foundationdb/fdb.cluster
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/examples/internal/ex"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// Cleanup is the job that removes one tombstone and its object's blocks.
type Cleanup struct {
	Object    string `json:"object"`
	ExpiresMs int64  `json:"expires_ms"`
}

func (Cleanup) Kind() string { return "cleanup" }

// uniqueKey names the tombstone: one pending cleanup per tombstone.
func (c Cleanup) uniqueKey() string { return fmt.Sprintf("tombstone:%s@%d", c.Object, c.ExpiresMs) }

// store is the application's data, and what the handlers did:
//
//	("obj", name)             -> a live object
//	("blk", name, i)          -> its data blocks, live or deleted
//	("tomb", expiresMs, name) -> a deleted object's tombstone, ordered by
//	                             the end of its retention
type store struct {
	env            *ex.Env
	obj, blk, tomb tuple.Subspace

	mu      sync.Mutex
	cleaned map[string]int // object -> cleanups that deleted it
	sweeps  int
}

func newStore(env *ex.Env) *store {
	a := env.App
	return &store{env: env, obj: a.Sub("obj"), blk: a.Sub("blk"), tomb: a.Sub("tomb"), cleaned: map[string]int{}}
}

// put stores an object of n blocks.
func (s *store) put(tr kv.Transaction, name string, n int) {
	tr.Set(s.obj.Pack(tuple.Tuple{name}), nil)
	for i := range n {
		tr.Set(s.blk.Pack(tuple.Tuple{name, i}), []byte("data"))
	}
}

// delete replaces an object by a tombstone kept until expires.
func (s *store) delete(tr kv.Transaction, name string, expires time.Time) {
	tr.Clear(s.obj.Pack(tuple.Tuple{name}))
	tr.Set(s.tomb.Pack(tuple.Tuple{expires.UnixMilli(), name}), nil)
}

// sweep enqueues, in one transaction, a cleanup job for every tombstone
// whose retention ended by at. It returns how many it found, and how many
// of those already had a cleanup pending (unique key held).
func (s *store) sweep(ctx context.Context, at time.Time) (found, pending int, err error) {
	q := s.env.Queue
	err = s.env.DB.Transact(ctx, func(tr kv.Transaction) error {
		begin, _ := s.tomb.Range()
		expired := kv.KeyRange{Begin: begin, End: s.tomb.Pack(tuple.Tuple{at.UnixMilli() + 1})}
		// A real sweep would page through a large backlog, a batch a run.
		kvs, err := tr.GetRange(expired, kv.RangeOptions{Limit: 1000}).GetSliceWithError()
		if err != nil {
			return err
		}
		jobs := make([]quick.NewJob, 0, len(kvs))
		for _, e := range kvs {
			t, err := s.tomb.Unpack(e.Key)
			if err != nil {
				return err
			}
			c := Cleanup{Object: t[1].(string), ExpiresMs: t[0].(int64)}
			j, err := quick.ArgsJob(c, &quick.InsertOpts{UniqueKey: c.uniqueKey()})
			if err != nil {
				return err
			}
			jobs = append(jobs, j)
		}
		res, err := q.EnqueueTx(tr, jobs...)
		if err != nil {
			return err
		}
		found, pending = len(res), 0
		for _, r := range res {
			if r.Duplicate {
				pending++
			}
		}
		return nil
	})
	return found, pending, err
}

// sweepOccurrence is the cron handler: one run of the schedule.
func (s *store) sweepOccurrence(ctx context.Context, occ cron.Occurrence) error {
	found, pending, err := s.sweep(ctx, occ.ScheduledAt)
	if err != nil {
		return err // the occurrence is retried; the chain waits for it
	}
	s.env.Printf("sweep scheduled at %s: %d expired tombstone(s): %d cleanup job(s) enqueued, %d already pending",
		s.env.Stamp(occ.ScheduledAt), found, found-pending, pending)
	s.mu.Lock()
	s.sweeps++
	s.mu.Unlock()
	return nil
}

// cleanup deletes a tombstone and its object's blocks in the transaction
// that completes the job.
func (s *store) cleanup(ctx context.Context, job *worker.Job[Cleanup]) error {
	c := job.Args
	var blocks int
	var gone bool
	err := job.CompleteWith(ctx, func(tr kv.Transaction) error {
		tk := s.tomb.Pack(tuple.Tuple{c.ExpiresMs, c.Object})
		v, err := tr.Get(tk).Get()
		if err != nil {
			return err
		}
		if gone = v == nil; gone {
			return nil // restored, or cleaned up already
		}
		r := kv.PrefixRange(s.blk.Pack(tuple.Tuple{c.Object}))
		kvs, err := tr.GetRange(r, kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		blocks = len(kvs)
		tr.ClearRange(r)
		tr.Clear(tk)
		return nil
	})
	if err != nil {
		return err
	}
	if gone {
		s.env.Printf("%s: %s has no tombstone any more: nothing to do", job.Lease.Holder, c.Object)
		return nil
	}
	s.mu.Lock()
	s.cleaned[c.Object]++
	s.mu.Unlock()
	s.env.Printf("%s: cleaned up %s: tombstone and %d blocks deleted", job.Lease.Holder, c.Object, blocks)
	return nil
}

// contents lists the live objects, the tombstones and the objects that
// still have blocks.
func (s *store) contents(ctx context.Context) (live, tombs, withBlocks []string, err error) {
	err = s.env.DB.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		live, tombs, withBlocks = nil, nil, nil
		list := func(sub tuple.Subspace, name func(tuple.Tuple) string, out *[]string) error {
			b, e := sub.Range()
			kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{}).GetSliceWithError()
			if err != nil {
				return err
			}
			for _, p := range kvs {
				t, err := sub.Unpack(p.Key)
				if err != nil {
					return err
				}
				if n := name(t); len(*out) == 0 || (*out)[len(*out)-1] != n {
					*out = append(*out, n)
				}
			}
			return nil
		}
		if err := list(s.obj, func(t tuple.Tuple) string { return t[0].(string) }, &live); err != nil {
			return err
		}
		if err := list(s.tomb, func(t tuple.Tuple) string { return t[1].(string) }, &tombs); err != nil {
			return err
		}
		return list(s.blk, func(t tuple.Tuple) string { return t[0].(string) }, &withBlocks)
	})
	sort.Strings(tombs)
	return live, tombs, withBlocks, err
}

func main() { ex.Main(run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var every time.Duration
	f, err := ex.Parse("sweep", args, os.Stderr, func(fs *flag.FlagSet) {
		fs.DurationVar(&every, "every", 0, "the sweep's period (default 1m on the smoke clock, 5s on the real one)")
	})
	if err != nil {
		return err
	}
	if every == 0 {
		every = 5 * time.Second
		if f.Smoke {
			every = time.Minute
		}
	}
	env, err := ex.Open(ctx, f, true, stdout, os.Stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	env.Describe(f)
	s := newStore(env)

	// Six objects; four deleted, with retentions that end before the
	// first sweep, between the sweeps, and long after.
	now := env.Clock.Now()
	expiry := map[string]time.Duration{"a.jpg": -every / 6, "b.jpg": every / 2, "c.jpg": every * 5 / 4, "d.jpg": every * 3 / 2, "f.jpg": 60 * every}
	err = env.DB.Transact(ctx, func(tr kv.Transaction) error {
		for _, name := range []string{"a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg", "f.jpg"} {
			s.put(tr, name, 3)
			if d, ok := expiry[name]; ok {
				s.delete(tr, name, now.Add(d))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	env.Printf("app: 6 objects of 3 blocks; deleted a.jpg (retention ended %v ago), b.jpg, c.jpg, d.jpg (ends in %v, %v, %v) and f.jpg (in %v)",
		-expiry["a.jpg"], expiry["b.jpg"], expiry["c.jpg"], expiry["d.jpg"], expiry["f.jpg"])

	// Two sweeps that overlap, before any worker runs: the second finds
	// the cleanup the first enqueued still pending.
	for _, who := range []string{"manual sweep", "overlapping manual sweep"} {
		found, pending, err := s.sweep(ctx, env.Clock.Now())
		if err != nil {
			return err
		}
		env.Printf("%s: %d expired tombstone(s): %d cleanup job(s) enqueued, %d already pending", who, found, found-pending, pending)
	}

	w, err := env.NewWorker("worker-1")
	if err != nil {
		return err
	}
	if err := cron.Handle(w, "sweep", s.sweepOccurrence, worker.HandlerOptions{}); err != nil {
		return err
	}
	if err := worker.Register(w, s.cleanup, worker.HandlerOptions{}); err != nil {
		return err
	}
	spec := fmt.Sprintf("@every %v", every)
	if err := cron.Register(ctx, env.Queue, cron.Schedule{Name: "tombstone-sweep", Spec: spec, TaskType: "sweep"}); err != nil {
		return err
	}
	env.Printf("app: registered the schedule tombstone-sweep %q", spec)
	r := ex.Start(w)
	defer r.Abort() // a no-op once stopped

	if err := env.WaitFor(ctx, "the manual sweep's cleanup", func() (bool, error) {
		page, err := env.Queue.List(ctx, quick.ListOptions{TaskType: "cleanup"})
		return len(page.Jobs) == 0, err
	}); err != nil {
		return err
	}

	// Let the schedule run twice, jumping the fake clock to each sweep.
	const sweeps = 2
	for k := 1; k <= sweeps; k++ {
		next, err := nextSweep(ctx, env)
		if err != nil {
			return err
		}
		if err := env.PassUntil(ctx, next); err != nil {
			return err
		}
		if err := env.WaitFor(ctx, fmt.Sprintf("sweep %d and its cleanups", k), func() (bool, error) {
			s.mu.Lock()
			ran := s.sweeps
			s.mu.Unlock()
			if ran < k {
				return false, nil
			}
			after, err := nextSweep(ctx, env)
			if err != nil || !after.After(next) {
				return false, err
			}
			page, err := env.Queue.List(ctx, quick.ListOptions{TaskType: "cleanup"})
			return len(page.Jobs) == 0, err
		}); err != nil {
			return err
		}
	}
	if err := r.Stop(ctx); err != nil {
		return err
	}
	return check(ctx, env, s)
}

// nextSweep is the time of the schedule's pending occurrence.
func nextSweep(ctx context.Context, env *ex.Env) (time.Time, error) {
	es, err := cron.List(ctx, env.Queue)
	if err != nil {
		return time.Time{}, err
	}
	for _, e := range es {
		if e.Name == "tombstone-sweep" {
			return e.Next, nil
		}
	}
	return time.Time{}, fmt.Errorf("no schedule tombstone-sweep")
}

func check(ctx context.Context, env *ex.Env, s *store) error {
	live, tombs, withBlocks, err := s.contents(ctx)
	if err != nil {
		return err
	}
	env.Printf("app: live objects %v; tombstones %v; objects with blocks %v", live, tombs, withBlocks)
	same := func(a []string, b ...string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
	if err := ex.Check(same(live, "e.jpg"), "live objects %v, want [e.jpg]", live); err != nil {
		return err
	}
	if err := ex.Check(same(tombs, "f.jpg"), "tombstones %v, want [f.jpg] (its retention has not ended)", tombs); err != nil {
		return err
	}
	if err := ex.Check(same(withBlocks, "e.jpg", "f.jpg"), "objects with blocks %v, want [e.jpg f.jpg]", withBlocks); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range []string{"a.jpg", "b.jpg", "c.jpg", "d.jpg"} {
		if err := ex.Check(s.cleaned[name] == 1, "%s cleaned up %d times, want 1", name, s.cleaned[name]); err != nil {
			return err
		}
	}
	env.Printf("OK: %d scheduled sweeps and 2 manual ones, 4 cleanup jobs, each expired object deleted once", s.sweeps)
	return nil
}
