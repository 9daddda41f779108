package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// Three workers on one fake clock each keep one presence record, with
// their task types and the jobs they run; ListWorkers reads them in one
// range read. A graceful stop clears its record at once; a killed worker's
// record goes stale after three of its periods (skipped by ListWorkers)
// and the purge-presence duty clears it.
func TestPresenceListsWorkers(t *testing.T) {
	e := newEnv(t, quick.Options{})
	block := make(chan struct{})
	var unblock sync.Once
	release := func() { unblock.Do(func() { close(block) }) }
	t.Cleanup(release)
	held := func(ctx context.Context, _ *RawJob) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	}
	names := []string{"a", "b", "c"}
	ws := map[string]*Worker{}
	hs := map[string]*runHandle{}
	for _, id := range names {
		w := e.newWorker(Config{ID: id}, func(w *Worker) {
			if err := RegisterRaw(w, "email", held, HandlerOptions{Concurrency: 2, Lease: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if id == "c" {
				if err := RegisterRaw(w, "sms", noopRaw, HandlerOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		})
		ws[id], hs[id] = w, e.start(w)
	}
	e.settle(ws["a"], ws["b"], ws["c"])
	ids := e.enqueue(quick.NewJob{TaskType: "email", ItemSpace: "acme"}, quick.NewJob{TaskType: "email", ItemSpace: "globex"})
	all := []*Worker{ws["a"], ws["b"], ws["c"]}
	e.waitFor("both jobs running", func() bool {
		n := int64(0)
		for _, w := range all {
			n += w.Stats().Running
		}
		return n == 2
	})
	// A clock round (every 5 heartbeat periods) writes the records.
	e.step(5*time.Second, time.Second, all...)

	cdb := kv.WithCounters(e.raw)
	q, err := quick.Open(e.ctx, cdb, e.space, quick.Options{Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	before := cdb.Stats()
	ps, err := ListWorkers(e.ctx, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d := cdb.Stats().Sub(before); d.RangeReads != 1 || d.Reads != 0 || d.KeysRead != 3 {
		t.Errorf("ListWorkers of 3 workers cost %v, want one range read of 3 keys", d)
	}
	if len(ps) != 3 {
		t.Fatalf("ListWorkers = %+v, want a, b and c", ps)
	}
	var running []quick.ID
	for i, p := range ps {
		if p.ID != names[i] || p.Process == "" || p.Started.IsZero() || p.Beat.Before(p.Started) || p.Beat.After(e.clk.Now()) {
			t.Errorf("record %d: %+v", i, p)
		}
		want := []string{"email"}
		if p.ID == "c" {
			want = []string{"email", "sms"}
		}
		if !slices.Equal(p.TaskTypes, want) {
			t.Errorf("%s's task types %v, want %v", p.ID, p.TaskTypes, want)
		}
		running = append(running, p.Running...)
	}
	slices.SortFunc(running, func(a, b quick.ID) int { return slices.Compare(a[:], b[:]) })
	want := []quick.ID{ids[0].ID, ids[1].ID}
	slices.SortFunc(want, func(a, b quick.ID) int { return slices.Compare(a[:], b[:]) })
	if !slices.Equal(running, want) {
		t.Errorf("running jobs %v, want %v", running, want)
	}
	if ps, _ := ListWorkers(e.ctx, q, 2); len(ps) != 2 {
		t.Errorf("ListWorkers with limit 2 returned %d", len(ps))
	}

	// The jobs finish. b stops gracefully: its record goes at once. c is
	// killed: its record stays, stale after three of its periods.
	release()
	e.waitFor("the jobs to finish", func() bool {
		n := int64(0)
		for _, w := range all {
			n += w.Stats().Completed
		}
		return n == 2
	})
	// b runs nothing now, so its stop needs no time to pass: stopped
	// without advancing the clock (e.stop's seconds, as many as the
	// machine is slow, would age a's and c's records past stale and, past
	// a minute, run a's purge-presence duty).
	stopCtx, cancel := context.WithTimeout(e.ctx, waitLimit)
	defer cancel()
	if err := ws["b"].Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	<-hs["b"].done
	ws["c"].kill()
	<-hs["c"].done
	if ps, _ := ListWorkers(e.ctx, q, 10); len(ps) != 2 || ps[0].ID != "a" || ps[1].ID != "c" {
		t.Fatalf("after b's stop: %+v, want a and c", ps)
	}
	e.step(3*5*time.Second+2*time.Second, time.Second, ws["a"])
	if ps, _ := ListWorkers(e.ctx, q, 10); len(ps) != 1 || ps[0].ID != "a" {
		t.Fatalf("after c's crash: %+v, want a alone", ps)
	}
	// The stale record is still stored, until the duty clears it.
	if n := countPresence(t, e, q); n != 2 {
		t.Fatalf("%d presence records stored, want a's and c's stale one", n)
	}
	n, err := purgePresence(e.ctx, q)
	if err != nil || n != 1 {
		t.Fatalf("purgePresence = %d, %v; want c's record cleared", n, err)
	}
	if n := countPresence(t, e, q); n != 1 {
		t.Fatalf("%d presence records stored after the purge, want a's", n)
	}
}

func countPresence(t *testing.T, e *env, q *quick.Queue) int {
	t.Helper()
	var n int
	err := e.raw.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		b, en := presenceSpace(q).Range()
		kvs, err := tr.GetRange(kv.KeyRange{Begin: b, End: en}, kv.RangeOptions{}).GetSliceWithError()
		n = len(kvs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A record that does not decode is skipped by ListWorkers and cleared by
// the purge; bad input loses nothing else.
func TestPresenceSkipsGarbage(t *testing.T) {
	e := newEnv(t, quick.Options{})
	if err := e.raw.Transact(e.ctx, func(tr kv.Transaction) error {
		tr.Set(presenceSpace(e.q).Pack([]any{"junk"}), []byte{0xff, 0xff})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if ps, err := ListWorkers(e.ctx, e.q, 0); err != nil || len(ps) != 0 {
		t.Fatalf("ListWorkers over garbage = %+v, %v", ps, err)
	}
	if _, err := ListWorkers(e.ctx, nil, 0); err == nil {
		t.Fatal("ListWorkers of a nil queue succeeded")
	}
	if n, err := purgePresence(e.ctx, e.q); err != nil || n != 1 {
		t.Fatalf("purgePresence over garbage = %d, %v", n, err)
	}
}
