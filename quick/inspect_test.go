package quick

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// FuzzIndexValue: any bytes either fail to decode with ErrCorrupt or decode
// to an entry naming a valid place, which round-trips.
func FuzzIndexValue(f *testing.F) {
	good := indexValue{Zone: []byte("\x15\x02\x02z\x00"), ItemSpace: "acme", TaskType: "email", Priority: Normal, Lane: 3, VestMs: 1 << 40}
	f.Add(good.marshal())
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff})
	bad := good
	bad.Lane = maxZoneLanes + 1
	f.Add(bad.marshal())
	bad = good
	bad.Priority = 7
	f.Add(bad.marshal())
	f.Add(append(good.marshal(), 0x30, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v indexValue
		if err := v.unmarshal(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(v.Zone) == 0 || v.Lane < 0 || v.Lane > maxZoneLanes || v.VestMs < 0 || validTaskType(v.TaskType) != nil {
			t.Fatalf("decoded an invalid entry %+v", v)
		}
		var back indexValue
		if err := back.unmarshal(v.marshal()); err != nil || !bytes.Equal(back.Zone, v.Zone) || back.ItemSpace != v.ItemSpace ||
			back.TaskType != v.TaskType || back.Priority != v.Priority || back.Lane != v.Lane || back.VestMs != v.VestMs {
			t.Fatalf("round trip %+v -> %+v, %v", v, back, err)
		}
		_ = v.lane() // names a lane without panicking
	})
}

func TestZoneGetFollowsATrackableJob(t *testing.T) {
	e := newZIEnv(t, Options{})
	later := e.clk.Now().Add(time.Hour)
	id := e.place(t, zijob{ItemSpace: "acme", Vest: later, V: zjobValue{Payload: []byte("hi"), MaxAttempts: 5, Flags: flagTrackable | flagWaitable}})
	info, err := e.q.Get(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != StateScheduled || info.TaskType != "email" || info.ItemSpace != "acme" || string(info.Payload) != "hi" ||
		!info.RunAt.Equal(later) || info.MaxAttempts != 5 || !info.Waitable || info.Priority != Normal {
		t.Fatalf("scheduled job: %+v", info)
	}
	e.clk.Advance(time.Hour)
	if info, _ = e.q.Get(e.ctx, id); info.State != StateReady {
		t.Fatalf("vested job is %v", info.State)
	}
	e.lease(t, id, "w1", time.Minute)
	info, err = e.q.Get(e.ctx, id)
	if err != nil || info.State != StateLeased || info.Holder != "w1" || info.Attempt != 1 {
		t.Fatalf("leased job: %+v, %v", info, err)
	}

	// A payload over InlinePayload is read from the zone's blob.
	big := bytes.Repeat([]byte("x"), InlinePayload+1)
	id2 := e.place(t, zijob{ItemSpace: "acme", V: zjobValue{Payload: big, Flags: flagTrackable}})
	if info, err := e.q.Get(e.ctx, id2); err != nil || !bytes.Equal(info.Payload, big) {
		t.Fatalf("blob payload: %d bytes, %v", len(info.Payload), err)
	}
}

func TestZoneGetOfAnUntrackedJobSaysSo(t *testing.T) {
	e := newZIEnv(t, Options{})
	id := e.place(t, zijob{ItemSpace: "acme", V: zjobValue{Payload: []byte("hi")}})
	_, err := e.q.Get(e.ctx, id)
	if !IsNotFound(err) || !errors.Is(err, ErrNotTrackable) || !strings.Contains(err.Error(), "Untracked") {
		t.Fatalf("Get of an untracked zones job: %v", err)
	}
	if err := e.q.Cancel(e.ctx, id); !errors.Is(err, ErrNotTrackable) {
		t.Fatalf("Cancel of an untracked zones job: %v", err)
	}
	if err := e.q.RunNow(e.ctx, id); !errors.Is(err, ErrNotTrackable) {
		t.Fatalf("RunNow of an untracked zones job: %v", err)
	}
}

func TestZoneGetOfACorruptIndexEntryIsAnError(t *testing.T) {
	e := newZIEnv(t, Options{})
	id := NewID(e.clk.Now())
	if err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set(e.q.zk.indexKey(id), []byte{0x0a, 0xff})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Get(e.ctx, id); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get through a corrupt index entry: %v", err)
	}
}

func TestZoneCancelClearsEverything(t *testing.T) {
	e := newZIEnv(t, Options{})
	big := bytes.Repeat([]byte("x"), InlinePayload+1)
	id := e.place(t, zijob{ItemSpace: "acme", Vest: e.clk.Now().Add(time.Hour),
		V: zjobValue{Payload: big, UniqueKey: "u1", Flags: flagTrackable | flagWaitable}})
	l := e.laneOf("email", "acme", id, 1)
	if err := e.q.Cancel(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string][]byte{
		"job key": l.jobKey(e.clk.Now().Add(time.Hour).UnixMilli(), id), "index": e.q.zk.indexKey(id),
		"blob": l.z.blobKey(id), "unique key": e.q.k.uniqKey("email", "u1"),
	} {
		if e.get(t, k) != nil {
			t.Errorf("%s left after cancel", name)
		}
	}
	o, err := e.q.Outcome(e.ctx, id)
	if err != nil || o.Kind != OutcomeCancelled {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if _, err := e.q.Get(e.ctx, id); !IsNotFound(err) {
		t.Fatalf("Get after cancel: %v", err)
	}
}

func TestZoneCancelOfARunningJobTakesItsKey(t *testing.T) {
	e := newZIEnv(t, Options{})
	id := e.place(t, zijob{ItemSpace: "acme", V: zjobValue{Flags: flagTrackable}})
	ms := e.lease(t, id, "w1", time.Minute)
	if err := e.q.Cancel(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	// The holder's next lease operation finds the key gone.
	if e.get(t, e.laneOf("email", "acme", id, 1).jobKey(ms, id)) != nil {
		t.Fatal("the leased key survived the cancel")
	}
}

func TestZoneRunNowMovesTheKeyAndCoversTheLane(t *testing.T) {
	e := newZIEnv(t, Options{})
	later := e.clk.Now().Add(time.Hour)
	id := e.place(t, zijob{ItemSpace: "acme", Vest: later, V: zjobValue{Payload: []byte("p"), Flags: flagTrackable}})
	l := e.laneOf("email", "acme", id, 1)
	if s, _ := e.laneState(t, l); s.PtrMs != later.UnixMilli() {
		t.Fatalf("pointer at %d before, want %d", s.PtrMs, later.UnixMilli())
	}
	e.clk.Advance(time.Second)
	nowMs := e.clk.Now().UnixMilli()
	if err := e.q.RunNow(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if e.get(t, l.jobKey(later.UnixMilli(), id)) != nil || e.get(t, l.jobKey(nowMs, id)) == nil {
		t.Fatal("the key did not move to now")
	}
	if s, _ := e.laneState(t, l); s.PtrMs != pointerMs(nowMs, nowMs) {
		t.Fatalf("lane pointer at %d, want now's new work %d: RunNow must cover the lane", s.PtrMs, pointerMs(nowMs, nowMs))
	}
	if e.get(t, e.q.pointerKeyOf(l, pointerMs(nowMs, nowMs))) == nil || e.get(t, e.q.pointerKeyOf(l, later.UnixMilli())) != nil {
		t.Fatal("the pointer entry did not move to now")
	}
	info, err := e.q.Get(e.ctx, id)
	if err != nil || info.State != StateReady || string(info.Payload) != "p" {
		t.Fatalf("after RunNow: %+v, %v", info, err)
	}
	// Ready already: nothing to do. Leased: refused.
	if err := e.q.RunNow(e.ctx, id); err != nil {
		t.Fatalf("RunNow of a ready job: %v", err)
	}
	e.lease(t, id, "w", time.Minute)
	if err := e.q.RunNow(e.ctx, id); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("RunNow of a leased job: %v", err)
	}
}

// Cancel, RunNow and Requeue of zones jobs recognise their own commit
// after commit_unknown_result (1021) instead of failing.
func TestZoneLookupOperationsRecogniseTheirOwnCommit(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		e := newZIEnv(t, Options{})
		id := e.place(t, zijob{ItemSpace: "acme", V: zjobValue{Flags: flagTrackable | flagWaitable}})
		fq := e.reopen(t, kv.WithFaults(e.raw, kv.Faults{UnknownCommitted: 1}))
		if err := fq.Cancel(e.ctx, id); err != nil {
			t.Fatalf("cancel after 1021: %v", err)
		}
		if o, err := e.q.Outcome(e.ctx, id); err != nil || o.Kind != OutcomeCancelled {
			t.Fatalf("outcome %+v, %v", o, err)
		}
	})
	t.Run("run now", func(t *testing.T) {
		e := newZIEnv(t, Options{})
		id := e.place(t, zijob{ItemSpace: "acme", Vest: e.clk.Now().Add(time.Hour), V: zjobValue{Flags: flagTrackable}})
		faulty := kv.WithFaults(e.raw, kv.Faults{UnknownCommitted: 1})
		fq := e.reopen(t, faulty)
		if err := fq.RunNow(e.ctx, id); err != nil {
			t.Fatalf("run now after 1021: %v", err)
		}
		if info, err := e.q.Get(e.ctx, id); err != nil || info.State != StateReady {
			t.Fatalf("after: %+v, %v", info, err)
		}
	})
	t.Run("requeue", func(t *testing.T) {
		e := newZIEnv(t, Options{})
		id := e.zdead(t, "email", "acme", []byte("p"), nil, flagTrackable)
		fq := e.reopen(t, kv.WithFaults(e.raw, kv.Faults{UnknownCommitted: 1}))
		if err := fq.Requeue(e.ctx, id); err != nil {
			t.Fatalf("requeue after 1021: %v", err)
		}
		if info, err := e.q.Get(e.ctx, id); err != nil || info.State != StateReady || string(info.Payload) != "p" {
			t.Fatalf("after: %+v, %v", info, err)
		}
		if n, _ := e.q.DeadCount(e.ctx, "email"); n != 0 {
			t.Fatalf("dead count %d after one requeue, want 0", n)
		}
	})
}

func TestZoneRequeuePlacesTheDeadLetterBackInItsZone(t *testing.T) {
	e := newZIEnv(t, Options{})
	e.setLanes(t, "email", "acme", 4)
	big := bytes.Repeat([]byte("y"), InlinePayload+10)
	ck := []byte("ckpt")
	small := e.zdead(t, "email", "acme", []byte("small"), ck, flagTrackable|flagWaitable)
	large := e.zdead(t, "email", "acme", big, nil, 0)
	if info, err := e.q.Get(e.ctx, small); err != nil || info.State != StateDead || info.ItemSpace != "acme" {
		t.Fatalf("dead letter: %+v, %v", info, err)
	}
	e.clk.Advance(time.Second)
	nowMs := e.clk.Now().UnixMilli()
	if err := e.q.Requeue(e.ctx, small); err != nil {
		t.Fatal(err)
	}
	if r, err := e.q.RequeueMatching(e.ctx, DeadFilter{TaskType: "email"}, BulkOptions{}); err != nil || r.Done != 1 {
		t.Fatalf("requeue matching: %+v, %v", r, err)
	}
	for _, c := range []struct {
		id      ID
		payload []byte
		blob    bool
	}{{small, []byte("small"), false}, {large, big, true}} {
		l := e.laneOf("email", "acme", c.id, 4)
		b := e.get(t, l.jobKey(nowMs, c.id))
		if b == nil {
			t.Fatalf("job %s is not at now in lane %d of 4", c.id, l.lane)
		}
		var v zjobValue
		if err := v.unmarshal(b); err != nil {
			t.Fatal(err)
		}
		payload := v.Payload
		if c.blob {
			payload = e.get(t, l.z.blobKey(c.id))
		}
		if v.Attempt != 0 || v.Flags&flagBlob != 0 != c.blob || !bytes.Equal(payload, c.payload) || v.LastError != "boom" {
			t.Fatalf("requeued value %+v (payload %d bytes)", v, len(payload))
		}
		if s, ok := e.laneState(t, l); !ok || s.PtrMs > nowMs || e.get(t, e.q.pointerKeyOf(l, s.PtrMs)) == nil {
			t.Fatalf("lane %d not covered: %+v %v", l.lane, s, ok)
		}
		if e.get(t, e.q.k.jobKey(c.id)) != nil {
			t.Fatal("the dead letter's record is left")
		}
	}
	info, err := e.q.Get(e.ctx, small)
	if err != nil || info.State != StateReady || !info.HasCheckpoint || !info.Waitable {
		t.Fatalf("requeued trackable job: %+v, %v", info, err)
	}
	if n, _ := e.q.DeadCount(e.ctx, "email"); n != 0 {
		t.Fatalf("dead count %d", n)
	}
	if err := e.q.Requeue(e.ctx, small); !IsNotFound(err) {
		t.Fatalf("second requeue: %v", err)
	}
}

func TestZoneCancelOfADeadLetterClearsItsZoneBlobs(t *testing.T) {
	e := newZIEnv(t, Options{})
	id := e.zdead(t, "email", "acme", nil, nil, 0)
	z := e.q.zoneOf("email", "acme")
	if err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set(z.blobKey(id), []byte("payload left in the zone"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.q.Cancel(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if e.get(t, z.blobKey(id)) != nil || e.get(t, e.q.k.jobKey(id)) != nil {
		t.Fatal("cancel left the dead letter or its blob")
	}
}
