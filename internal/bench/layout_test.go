package bench

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestMirrorMatchesQuick pins the mirror of quick's layout: jobs enqueued by
// quick, leased, failed and completed by the mirror, must look to quick
// exactly as if quick had done it.
func TestMirrorMatchesQuick(t *testing.T) {
	for _, lanes := range []int{1, 16} {
		ctx := context.Background()
		db := memkv.Open(memkv.Options{})
		defer db.Close()
		space := tuple.FromTuple(tuple.Tuple{"mirror"})
		cfg := Short()
		cfg.RetryDelay = 0
		e, err := openEnv(ctx, db, space, cfg, lanes, func(*quick.Options) {})
		if err != nil {
			t.Fatal(err)
		}
		m := e.mirror()
		res, err := e.qEnq.Enqueue(ctx, quick.NewJob{TaskType: e.taskType, Payload: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		id := res[0].ID

		// Find the job's key the way the strategies do and lease it.
		var leased []mirrorLease
		err = db.Transact(ctx, func(tr kv.Transaction) error {
			now := time.Now()
			var cands []candidate
			for l := 0; l < lanes; l++ {
				kvs, err := tr.GetRange(m.l.laneRange(e.taskType, l, normalPrio), kv.RangeOptions{}).GetSliceWithError()
				if err != nil {
					return err
				}
				c, _ := m.vested(kvs, now.UnixMilli())
				cands = append(cands, c...)
			}
			if len(cands) != 1 || cands[0].sk.ID != id || cands[0].sv.MaxAttempts != 25 {
				t.Fatalf("lanes=%d: mirror scan found %+v, want job %s with 25 attempts", lanes, cands, id)
			}
			leased, err = m.leaseTx(tr, cands, "mirror-worker", now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		info, err := e.qEnq.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != quick.StateLeased || info.Holder != "mirror-worker" || info.Attempt != 1 || info.Lane != leased[0].sk.Lane {
			t.Fatalf("lanes=%d: after a mirror lease quick sees %+v", lanes, info)
		}

		lost, err := m.fail(ctx, db, leased[0], time.Now(), 0, "boom")
		if err != nil || lost {
			t.Fatalf("fail: lost=%v err=%v", lost, err)
		}
		info, err = e.qEnq.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != quick.StateReady || info.LastError != "boom" || info.Attempt != 1 || info.Holder != "" {
			t.Fatalf("lanes=%d: after a mirror fail quick sees %+v", lanes, info)
		}
		// quick claims what the mirror re-placed; the mirror's stale lease is
		// then lost, as quick's would be.
		cl, err := e.qClaim.Claim(ctx, quick.ClaimOptions{TaskType: e.taskType, Holder: "quick-worker"})
		if err != nil || len(cl.Jobs) != 1 || cl.Jobs[0].Attempt != 2 {
			t.Fatalf("quick claim after mirror fail: %+v, %v", cl, err)
		}
		if lost, err := m.complete(ctx, db, leased[0]); err != nil || !lost {
			t.Fatalf("completing a stale mirror lease: lost=%v err=%v, want lost", lost, err)
		}
		if err := e.qAck.Complete(ctx, cl.Jobs[0]); err != nil {
			t.Fatal(err)
		}
		if info, err := e.qEnq.Get(ctx, id); err != nil || info.State != quick.StateFinished {
			t.Fatalf("after complete: %+v, %v", info, err)
		}
	}
}

// TestMirrorDeleteAndComplete checks the recipe's delete and the mirror's
// complete leave nothing of the job but its enqueue marker.
func TestMirrorDeleteAndComplete(t *testing.T) {
	ctx := context.Background()
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	e, err := openEnv(ctx, db, tuple.FromTuple(tuple.Tuple{"mirror2"}), Short(), 1, func(*quick.Options) {})
	if err != nil {
		t.Fatal(err)
	}
	rc := &recipeClaimer{e: e, id: "r", del: true, m: e.mirror()}
	lc := &recipeClaimer{e: e, id: "l", m: e.mirror()}
	for _, c := range []*recipeClaimer{rc, lc} {
		res, err := e.qEnq.Enqueue(ctx, quick.NewJob{TaskType: e.taskType})
		if err != nil {
			t.Fatal(err)
		}
		jobs, _, err := c.claim(ctx, 1)
		if err != nil || len(jobs) != 1 || jobs[0].id != res[0].ID {
			t.Fatalf("claim: %+v, %v", jobs, err)
		}
		if lost, err := c.ack(ctx, []ackReq{{j: jobs[0]}}); err != nil || lost != 0 {
			t.Fatalf("ack: lost=%d err=%v", lost, err)
		}
		if info, err := e.qEnq.Get(ctx, res[0].ID); err != nil || info.State != quick.StateFinished {
			t.Fatalf("after dequeue/complete: %+v, %v", info, err)
		}
	}
}
