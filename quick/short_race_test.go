package quick

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Races of short-job mode, made deterministic: another client's
// transaction is slipped in between an operation's reads and its commit.

// zhookDB runs before once, before the first commit that writes or
// checks anything of a transaction made through it.
type zhookDB struct {
	kv.Database
	before func()
}

func (d *zhookDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &zhookTx{Transaction: tr, db: d}, nil
}

func (d *zhookDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type zhookTx struct {
	kv.Transaction
	db *zhookDB
}

func (t *zhookTx) Commit() error {
	if f := t.db.before; f != nil {
		t.db.before = nil
		f()
	}
	return t.Transaction.Commit()
}

func (e *zenv) hooked(t *testing.T, before func()) *Queue {
	t.Helper()
	db := &zhookDB{Database: e.db}
	q, err := Open(e.ctx, db, e.space, e.q.opts)
	if err != nil {
		t.Fatal(err)
	}
	db.before = before
	return q
}

// The empty-lane race: a job placed in a lane while its holder hands the
// empty lane back makes the hand-back conflict and retry; the lane keeps a
// pointer that vests by the new job.
func TestShortHandBackRacesAnEnqueue(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, zjob{})
	res := e.shortClaim(t, "w", nil, 10)
	if _, err := e.q.Ack(e.ctx, completes(res.Jobs)...); err != nil {
		t.Fatal(err)
	}
	var id ID
	q := e.hooked(t, func() { id = e.zput(t, zjob{})[0] })
	before := e.db.Stats()
	if _, err := q.Consumer().HandBack(e.ctx, *res.Lane, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if d := e.db.Stats().Sub(before); d.Conflicts == 0 {
		t.Fatalf("the hand-back did not conflict with the enqueue: %v", d)
	}
	s, ok := e.laneState(t, e.lane0("email", ""))
	if !ok || s.leased() || s.PtrMs > e.clk.Now().UnixMilli() {
		t.Fatalf("lane after the race %+v, %v; want a pointer vested now", s, ok)
	}
	next := e.shortClaim(t, "w2", nil, 10)
	if len(next.Jobs) != 1 || next.Jobs[0].ID != id {
		t.Fatalf("the job placed in the race: %+v", next.Jobs)
	}
}

// An ack racing the takeover of its lapsed lane conflicts, retries and
// finds the lane lost: a stale holder clears nothing.
func TestShortAckRacesATakeover(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, zjob{}, zjob{})
	res := e.shortClaim(t, "w1", nil, 10)
	e.clk.Advance(time.Minute) // w1's lane lease lapsed
	var taken []Lease
	q := e.hooked(t, func() {
		var p LaneLease
		p, taken = e.zacquireClaim(t, e.truth, "email", "w2", time.Minute, 10)
		if !p.Lapsed {
			t.Error("the takeover was not lapsed")
		}
	})
	_, err := q.Ack(e.ctx, completes(res.Jobs)...)
	if !IsLaneLost(err) || len(taken) != 2 {
		t.Fatalf("ack racing the takeover = %v (taken %d); want the lane lost", err, len(taken))
	}
	if jks, _ := e.laneKeys(t, e.lane0("email", "")); len(jks) != 2 {
		t.Fatalf("keys %+v; want both, held by w2", jks)
	}
}

// An ack racing a takeover that has not claimed the jobs yet still finds
// the lane lost (its lane-state read conflicts), and clears nothing.
func TestShortAckRacesATakeoverBeforeItsClaim(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, zjob{})
	res := e.shortClaim(t, "w1", nil, 10)
	e.clk.Advance(time.Minute)
	q := e.hooked(t, func() {
		err := e.truth.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
			p, found, _, err := e.truth.acquire(tr, "email", "w2", 0, time.Minute, false, e.clk.Now())
			if err == nil && !found {
				t.Error("no lane to take over")
			}
			if found {
				e.truth.saveHold(tr, &p)
			}
			return err
		})
		if err != nil {
			t.Error(err)
		}
	})
	if err := q.Complete(e.ctx, res.Jobs[0]); !IsLaneLost(err) {
		t.Fatalf("complete racing the takeover = %v", err)
	}
	if jks, _ := e.laneKeys(t, e.lane0("email", "")); len(jks) != 1 {
		t.Fatal("a stale holder cleared a job of a lane taken over")
	}
}

// A promotion (Extend) racing the takeover of its lane loses as well.
func TestShortExtendRacesATakeover(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, zjob{})
	res := e.shortClaim(t, "w1", nil, 10)
	e.clk.Advance(time.Minute)
	q := e.hooked(t, func() { e.zacquireClaim(t, e.truth, "email", "w2", time.Minute, 10) })
	if _, err := q.Extend(e.ctx, res.Jobs[0], time.Minute); !IsLaneLost(err) {
		t.Fatalf("extend racing the takeover = %v", err)
	}
	_, vs := e.laneKeys(t, e.lane0("email", ""))
	if len(vs) != 1 || vs[0].Holder != "w2" {
		t.Fatalf("job after the race %+v", vs)
	}
}

// takeShort refuses a lane taken over from a lapsed holder: its jobs run
// with per-job leases, which count attempts.
func TestTakeShortRefusesALapsedLane(t *testing.T) {
	e := newZEnv(t, Options{}, nil)
	e.zput(t, zjob{})
	e.shortClaim(t, "w1", nil, 10)
	e.clk.Advance(time.Minute)
	if _, _, err := zshortClaim(e.ctx, e.q, "email", "w2", nil, 10); err == nil {
		t.Fatal("a lapsed lane's jobs were handed out short")
	}
}
