package quick

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Lease operations on per-job leases of the zones layout.

// claimOne places one job and claims it by hand with a one-minute lease.
func (e *zenv) claimOne(t testing.TB, j zjob) (ID, Lease) {
	t.Helper()
	id := e.zput(t, j)[0]
	l0 := e.lane0(j.taskType(), j.ItemSpace)
	if j.Priority != 0 {
		l0.prio = j.Priority
	}
	ls := e.zclaim(t, l0, "w", time.Minute, 1)
	if len(ls) != 1 || ls[0].ID != id {
		t.Fatalf("claimed %+v, want job %s", ls, id)
	}
	return id, ls[0]
}

func (j zjob) taskType() string {
	if j.TaskType == "" {
		return "email"
	}
	return j.TaskType
}

func TestZoneCompleteIsOneClear(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	_, l := e.claimOne(t, zjob{Payload: []byte("hello")})
	before := e.db.Stats()
	if err := e.q.Complete(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	d := e.db.Stats().Sub(before)
	if d.Mutations != 1 || d.Commits != 1 {
		t.Fatalf("complete cost %v; want 1 mutation in 1 commit", d)
	}
	if jks, _ := e.laneKeys(t, e.lane0("email", "")); len(jks) != 0 {
		t.Fatalf("job keys left: %+v", jks)
	}
	err := e.q.Complete(e.ctx, l)
	var lost *LeaseLostError
	if !errors.As(err, &lost) || lost.Reason != "moved" {
		t.Fatalf("second complete = %v, want a lost lease (moved)", err)
	}
}

// Complete clears what the job has besides its key (blobs, unique key,
// lookup index) and records the outcome of a waitable job.
func TestZoneCompleteClearsWhatTheJobHas(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	big := bytes.Repeat([]byte("p"), InlinePayload+1)
	id, l := e.claimOne(t, zjob{Payload: big, UniqueKey: "u1", Flags: flagWaitable, Checkpoint: bytes.Repeat([]byte("c"), 2*InlinePayload)})
	if !bytes.Equal(l.Payload, big) {
		t.Fatal("claim did not read the payload blob")
	}
	z := e.lane0("email", "").z
	if err := e.q.Complete(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string][]byte{"blob": z.blobKey(id), "checkpoint": z.ckptKey(id), "unique": e.q.k.uniqKey("email", "u1")} {
		if e.get(t, k) != nil {
			t.Errorf("%s key left after complete", name)
		}
	}
	o, err := decodeOutcome(id, e.get(t, e.q.outcomeKey(id)))
	if err != nil || o.Kind != OutcomeCompleted || o.Attempts != 1 {
		t.Fatalf("outcome %+v, %v; want completed after 1 attempt", o, err)
	}
}

// A key where the lease says that carries another token is another
// lease's (a lapsed lease claimed at exactly its deadline and released).
func TestZoneLeaseLostOnToken(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	_, l := e.claimOne(t, zjob{})
	key := l.zl.key(l.ID)
	v := l.zl.v
	v.Token++
	if err := e.raw.Transact(e.ctx, func(tr kv.Transaction) error { tr.Set(key, v.marshal()); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []AckKind{AckComplete, AckFail, AckSnooze, AckRelease, AckDeadLetter} {
		res, err := e.q.Ack(e.ctx, Ack{Lease: l, Kind: kind, Delay: time.Minute})
		var lost *LeaseLostError
		if !errors.As(err, &lost) || lost.Reason != "token" || len(res) != 1 || res[0].Err == nil {
			t.Fatalf("%s under a stale token = %+v, %v; want lost (token)", kind, res, err)
		}
	}
	if _, err := e.q.Extend(e.ctx, l, time.Minute); !IsLeaseLost(err) {
		t.Fatalf("extend under a stale token = %v", err)
	}
	if _, err := e.q.Checkpoint(e.ctx, l, []byte("x"), time.Minute); !IsLeaseLost(err) {
		t.Fatalf("checkpoint under a stale token = %v", err)
	}
	if got := e.get(t, key); !bytes.Equal(got, v.marshal()) {
		t.Fatal("a stale lease changed the job")
	}
}

func TestZoneExtendMovesTheKeyLater(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	_, l := e.claimOne(t, zjob{Payload: []byte("x")})
	e.clk.Advance(10 * time.Second)
	before := e.db.Stats()
	l2, err := e.q.Extend(e.ctx, l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d := e.db.Stats().Sub(before); d.Mutations != 2 || d.Commits != 1 {
		t.Fatalf("extend cost %v; want a clear and a set in one commit", d)
	}
	want := zepoch.Add(70 * time.Second)
	if !l2.Deadline.Equal(want) || l2.Attempt != 1 || l2.zl.v.Token != l.zl.v.Token {
		t.Fatalf("extended lease %+v; want deadline %v, attempt 1, same token", l2, want)
	}
	jks, _ := e.laneKeys(t, e.lane0("email", ""))
	if len(jks) != 1 || jks[0].VestMs != want.UnixMilli() {
		t.Fatalf("keys after extend %+v", jks)
	}
	if _, err := e.q.Extend(e.ctx, l, time.Minute); !IsLeaseLost(err) {
		t.Fatalf("extend with the old lease = %v, want lost", err)
	}
	if err := e.q.Complete(e.ctx, l2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Extend(e.ctx, l, time.Second); !errors.Is(err, ErrInvalidLease) {
		t.Fatalf("extend by 1s = %v, want ErrInvalidLease", err)
	}
}

func TestZoneCheckpointInlineAndBlob(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	id, l := e.claimOne(t, zjob{Payload: []byte("x")})
	z := e.lane0("email", "").z
	small := []byte("half")
	l2, err := e.q.Checkpoint(e.ctx, l, small, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l2.Checkpoint, small) || !bytes.Equal(l2.zl.v.Checkpoint, small) || l2.zl.v.Flags&flagCkptBlob != 0 {
		t.Fatalf("inline checkpoint lease %+v", l2.zl.v)
	}
	e.clk.Advance(time.Second)
	big := bytes.Repeat([]byte("b"), InlinePayload+1)
	l3, err := e.q.Checkpoint(e.ctx, l2, big, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l3.zl.v.Checkpoint != nil || l3.zl.v.Flags&(flagCkptBlob|flagCheckpoint) != flagCkptBlob|flagCheckpoint || !bytes.Equal(e.get(t, z.ckptKey(id)), big) {
		t.Fatalf("blob checkpoint: value %+v", l3.zl.v)
	}
	// Back to a small one: the blob goes.
	l4, err := e.q.Checkpoint(e.ctx, l3, small, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if e.get(t, z.ckptKey(id)) != nil || l4.zl.v.Flags&flagCkptBlob != 0 {
		t.Fatal("a small checkpoint left the blob")
	}
	// The next holder resumes from it.
	if err := e.q.Release(e.ctx, l4); err != nil {
		t.Fatal(err)
	}
	next := e.zclaim(t, e.lane0("email", ""), "w2", time.Minute, 1)
	if len(next) != 1 || !bytes.Equal(next[0].Checkpoint, small) {
		t.Fatalf("next holder got %+v", next)
	}
	if _, err := e.q.Checkpoint(e.ctx, l, small, time.Minute); !IsLeaseLost(err) {
		t.Fatalf("checkpoint with an old lease = %v", err)
	}
}

// A failed job moves to its backoff with the attempt kept and the error
// recorded; a vesting time earlier than the lane's pointer pulls the
// pointer earlier, so the job is found when it vests.
func TestZoneFailBacksOffAndCoversTheLane(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	id := e.zput(t, zjob{Payload: []byte("x")})[0]
	l0 := e.lane0("email", "")
	// A claim that takes the job and hands the lane back: its pointer
	// moves to the lease's deadline, the lane's earliest key.
	_, ls := e.zacquireClaim(t, e.truth, "email", "w", 10*time.Minute, 10)
	if len(ls) != 1 || ls[0].ID != id {
		t.Fatalf("claim got %+v", ls)
	}
	if s, ok := e.laneState(t, l0); !ok || s.PtrMs != zepoch.Add(10*time.Minute).UnixMilli() || s.leased() {
		t.Fatalf("lane state after the claim %+v, %v", s, ok)
	}
	res, err := e.q.Ack(e.ctx, Ack{Lease: ls[0], Kind: AckFail, Error: "boom"}) // backoff 1 min
	if err != nil || res[0].Dead || !res[0].RunAt.Equal(zepoch.Add(time.Minute)) {
		t.Fatalf("fail = %+v, %v", res, err)
	}
	if s, _ := e.laneState(t, l0); s.PtrMs != zepoch.Add(time.Minute).UnixMilli() {
		t.Fatalf("the pointer was not pulled to the retry: %+v", s)
	}
	jks, vs := e.laneKeys(t, l0)
	if len(jks) != 1 || vs[0].Attempt != 1 || vs[0].LastError != "boom" || vs[0].Token != 0 || vs[0].Holder != "" {
		t.Fatalf("after fail: %+v %+v", jks, vs)
	}
	if _, again := e.zacquireClaim(t, e.truth, "email", "w", time.Minute, 10); len(again) != 0 {
		t.Fatal("claimed before the backoff ended")
	}
	e.clk.Advance(time.Minute)
	_, again := e.zacquireClaim(t, e.truth, "email", "w2", time.Minute, 10)
	if len(again) != 1 || again[0].Attempt != 2 || again[0].LastError != "boom" {
		t.Fatalf("reclaim after the backoff: %+v", again)
	}
	if err := e.q.Fail(e.ctx, ls[0], "late"); !IsLeaseLost(err) {
		t.Fatalf("fail with the first lease = %v, want lost", err)
	}
}

func TestZoneSnoozeAndReleaseGiveTheAttemptBack(t *testing.T) {
	for _, kind := range []AckKind{AckSnooze, AckRelease} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newZEnv(t, Options{}, nil)
			_, l := e.claimOne(t, zjob{Payload: []byte("x")})
			res, err := e.q.Ack(e.ctx, Ack{Lease: l, Kind: kind, Delay: 5 * time.Minute})
			want := zepoch
			if kind == AckSnooze {
				want = zepoch.Add(5 * time.Minute)
			}
			if err != nil || !res[0].RunAt.Equal(want) {
				t.Fatalf("%s = %+v, %v", kind, res, err)
			}
			jks, vs := e.laneKeys(t, e.lane0("email", ""))
			if len(jks) != 1 || jks[0].VestMs != want.UnixMilli() || vs[0].Attempt != 0 || vs[0].Token != 0 || string(vs[0].Payload) != "x" {
				t.Fatalf("after %s: %+v %+v", kind, jks, vs)
			}
		})
	}
}

// A fail on the last attempt, and a dead letter, make a schema-1 dead
// letter record with the job's fields and clear the zone's keys.
func TestZoneDeadLetterFields(t *testing.T) {
	for _, kind := range []AckKind{AckFail, AckDeadLetter} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newZEnv(t, Options{}, nil)
			big := bytes.Repeat([]byte("p"), InlinePayload+5)
			ck := bytes.Repeat([]byte("c"), InlinePayload+7)
			id, l := e.claimOne(t, zjob{ItemSpace: "acme", Priority: High, Payload: big, MaxAttempts: 1, UniqueKey: "u",
				Flags: flagWaitable, Checkpoint: ck})
			e.clk.Advance(time.Second)
			res, err := e.q.Ack(e.ctx, Ack{Lease: l, Kind: kind, Error: strings.Repeat("e", 3000)})
			if err != nil || !res[0].Dead {
				t.Fatalf("%s = %+v, %v; want dead", kind, res, err)
			}
			var rec record
			if err := rec.unmarshal(e.get(t, e.q.k.jobKey(id))); err != nil {
				t.Fatal(err)
			}
			deadMs := zepoch.Add(time.Second).UnixMilli()
			if rec.TaskType != "email" || rec.Priority != int64(High) || rec.ItemSpace != "acme" || !bytes.Equal(rec.Payload, big) ||
				rec.MaxAttempts != 1 || rec.UniqueKey != "u" || rec.CreatedAtMs != id.Time().UnixMilli() || rec.State != stateDead ||
				rec.DeadAtMs != deadMs || rec.LastError != strings.Repeat("e", maxErrorLen) || rec.Attempts != 1 ||
				rec.Flags != flagZones|flagWaitable|flagCheckpoint {
				t.Fatalf("dead letter record %+v", rec)
			}
			if !bytes.Equal(e.get(t, e.q.k.ckptKey(id)), ck) {
				t.Fatal("the checkpoint was not kept with the dead letter")
			}
			if e.get(t, e.q.k.deadKey("email", deadMs, id)) == nil || decodeCounter(e.get(t, e.q.k.deadCountKey("email"))) != 1 {
				t.Fatal("no dead-letter index entry or count")
			}
			z := e.lane0("email", "acme").z
			for name, k := range map[string][]byte{"blob": z.blobKey(id), "checkpoint blob": z.ckptKey(id), "unique": e.q.k.uniqKey("email", "u")} {
				if e.get(t, k) != nil {
					t.Errorf("%s key left", name)
				}
			}
			l0 := e.lane0("email", "acme")
			l0.prio = High
			if jks, _ := e.laneKeys(t, l0); len(jks) != 0 {
				t.Fatalf("job keys left %+v", jks)
			}
			o, err := decodeOutcome(id, e.get(t, e.q.outcomeKey(id)))
			if err != nil || o.Kind != OutcomeDeadLettered || o.Attempts != 1 {
				t.Fatalf("outcome %+v, %v", o, err)
			}
			page, err := e.q.ListDead(e.ctx, ListDeadOptions{TaskType: "email"})
			if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != id || page.Jobs[0].ItemSpace != "acme" {
				t.Fatalf("ListDead = %+v, %v", page, err)
			}
		})
	}
}

// Ack splits zones acks into bounded transactions, by count and by bytes.
func TestZoneAckSplitsByCountAndBytes(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	jobs := make([]zjob, 600)
	e.zput(t, jobs...)
	ls := e.zclaim(t, e.lane0("email", ""), "w", time.Minute, 600)
	acks := make([]Ack, len(ls))
	for i, l := range ls {
		acks[i] = Ack{Lease: l, Kind: AckComplete}
	}
	before := e.db.Stats()
	if res, err := e.q.Ack(e.ctx, acks...); err != nil || len(res) != 600 {
		t.Fatalf("ack = %d results, %v", len(res), err)
	}
	if d := e.db.Stats().Sub(before); d.Commits != 2 || d.Mutations != 600 {
		t.Fatalf("600 completes: %v; want 2 commits (500 a transaction) and 600 clears", d)
	}
	// Fails rewrite the job's value: 40 jobs of 60 kB go in several.
	e2 := newZEnv(t, Options{}, nil)
	big := make([]zjob, 40)
	for i := range big {
		big[i].Payload = bytes.Repeat([]byte{byte(i)}, 60_000)
	}
	e2.zput(t, big...)
	ls = e2.zclaim(t, e2.lane0("email", ""), "w", time.Minute, 40)
	acks = acks[:0]
	for _, l := range ls {
		acks = append(acks, Ack{Lease: l, Kind: AckDeadLetter})
	}
	before = e2.db.Stats()
	if _, err := e2.q.Ack(e2.ctx, acks...); err != nil {
		t.Fatal(err)
	}
	if d := e2.db.Stats().Sub(before); d.Commits < 3 {
		t.Fatalf("40 dead letters of 60 kB in %d commits; want them split under 1 MB each", d.Commits)
	}
}

// AckTx and the Tx forms apply inside the caller's transaction.
func TestZoneAckTx(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	_, l := e.claimOne(t, zjob{})
	_, l2 := e.claimOne(t, zjob{})
	err := e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set([]byte("effect"), []byte("1"))
		if err := e.q.CompleteTx(tr, l); err != nil {
			return err
		}
		return e.q.FailTx(tr, l2, "x")
	})
	if err != nil {
		t.Fatal(err)
	}
	jks, vs := e.laneKeys(t, e.lane0("email", ""))
	if len(jks) != 1 || jks[0].ID != l2.ID || vs[0].LastError != "x" {
		t.Fatalf("after the transaction: %+v %+v", jks, vs)
	}
	err = e.q.transact(e.ctx, func(tr kv.Transaction, _ bool) error { return e.q.CompleteTx(tr, l) })
	if !IsLeaseLost(err) {
		t.Fatalf("CompleteTx of a finished job = %v", err)
	}
}

// Extends rewrite the job's value (payload and checkpoint inline): 500 of
// 2.5 kB go in two transactions, under FDB's advised 1 MB each.
func TestZoneExtendSplitsByBytes(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	jobs := make([]zjob, 500)
	for i := range jobs {
		jobs[i] = zjob{Payload: bytes.Repeat([]byte("p"), InlinePayload), Checkpoint: bytes.Repeat([]byte("c"), InlinePayload),
			UniqueKey: strings.Repeat("u", 400) + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}
	}
	e.zput(t, jobs...)
	ls := e.zclaim(t, e.lane0("email", ""), "w", time.Minute, 500)
	e.clk.Advance(time.Second)
	before := e.db.Stats()
	out, errs, err := e.q.ExtendMany(e.ctx, ls, time.Minute)
	if err != nil || len(out) != 500 {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d := e.db.Stats().Sub(before)
	if d.Commits != 2 || d.BytesWritten/d.Commits > 1<<20 {
		t.Fatalf("500 extends of 2.5 kB: %v; want 2 commits under 1 MB", d)
	}
}
