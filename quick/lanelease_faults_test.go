package quick

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Every zones lease operation recognises its own commit after a fault that
// applied it and reported it unknown (1021, or a 1031 or 1025 that struck
// the commit in flight), and applies once after one that did not. As in
// TestEveryOperationRecognisesItsOwnCommit (faults_test.go), the faults
// strike every commit that writes: an operation that recognises its own
// commit writes nothing on the retry, so its read-only commit goes through.
// The faults that did not apply strike the first commit only.

var zcommitFaults = map[string]struct {
	f       kv.Faults
	applied bool
}{
	"1021-applied":       {kv.Faults{UnknownCommitted: 1}, true},
	"1021-not-applied":   {kv.Faults{UnknownNotCommitted: 1}, false},
	"1031-in-commit":     {kv.Faults{TimedOutCommitted: 1}, true},
	"1025-in-commit":     {kv.Faults{CancelledCommitted: 1}, true},
	"1031-before-commit": {kv.Faults{TimedOutNotCommitted: 1}, false},
}

// faultOnce disables a FaultyDB after the first fault it injected.
type faultOnce struct {
	kv.Database
	f *kv.FaultyDB
}

func (d *faultOnce) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &faultOnceTx{Transaction: tr, f: d.f}, nil
}

func (d *faultOnce) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.Retry(ctx, tr, fn)
}

type faultOnceTx struct {
	kv.Transaction
	f *kv.FaultyDB
}

func (t *faultOnceTx) Commit() error {
	err := t.Transaction.Commit()
	if t.f.Stats().Total() > 0 {
		t.f.SetEnabled(false)
	}
	return err
}

// zfaultEnv is a zenv whose q commits through the fault.
func zfaultEnv(t *testing.T, name string) *zenv {
	t.Helper()
	fc := zcommitFaults[name]
	e := newZEnv(t, Options{}, &fc.f)
	if !fc.applied {
		q, err := Open(e.ctx, &faultOnce{Database: e.faulty, f: e.faulty}, e.space, e.q.opts)
		if err != nil {
			t.Fatal(err)
		}
		e.q = q
	}
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	t.Cleanup(cancel)
	e.ctx = ctx
	return e
}

func checkFaulted(t *testing.T, e *zenv) {
	t.Helper()
	if e.faulty.Stats().Total() == 0 {
		t.Fatal("no fault injected")
	}
}

func TestZoneOperationsRecogniseTheirOwnCommit(t *testing.T) {
	for name := range zcommitFaults {
		t.Run(name, func(t *testing.T) {
			for _, kind := range []AckKind{AckComplete, AckFail, AckSnooze, AckRelease, AckDeadLetter} {
				for _, short := range []bool{false, true} {
					sub := kind.String()
					if short {
						sub = "short-" + sub
					}
					t.Run(sub, func(t *testing.T) {
						e := zfaultEnv(t, name)
						e.faulty.SetEnabled(false)
						id := e.zput(t, zjob{MaxAttempts: 3, Payload: []byte("x")})[0]
						var l Lease
						if short {
							res, _, err := zshortClaim(e.ctx, e.truth, "email", "w", nil, 1)
							if err != nil || len(res.Jobs) != 1 {
								t.Fatalf("short claim %+v, %v", res, err)
							}
							l = res.Jobs[0]
						} else {
							l = e.zclaim(t, e.lane0("email", ""), "w", time.Minute, 1)[0]
						}
						e.faulty.SetEnabled(true)
						e.clk.Advance(time.Second) // a short job released now moves
						res, err := e.q.Ack(e.ctx, Ack{Lease: l, Kind: kind, Error: "boom", Delay: time.Minute})
						if err != nil || res[0].Err != nil {
							t.Fatalf("%s = %+v, %v", kind, res, err)
						}
						checkFaulted(t, e)
						jks, vs := e.laneKeys(t, e.lane0("email", ""))
						switch kind {
						case AckComplete, AckDeadLetter:
							if len(jks) != 0 {
								t.Fatalf("after %s: keys %+v", kind, jks)
							}
							if kind == AckDeadLetter && !res[0].Dead {
								t.Fatalf("dead letter result %+v", res[0])
							}
						default:
							wantMs := zepoch.Add(time.Second + time.Minute).UnixMilli()
							if kind == AckRelease {
								wantMs = zepoch.Add(time.Second).UnixMilli()
							}
							wantAttempt := int64(0)
							if kind == AckFail {
								wantAttempt = 1
							}
							if len(jks) != 1 || jks[0].VestMs != wantMs || vs[0].Attempt != wantAttempt || vs[0].Token != 0 {
								t.Fatalf("after %s: %+v %+v", kind, jks, vs)
							}
						}
						if kind == AckDeadLetter {
							if n := decodeCounter(e.get(t, e.q.k.deadCountKey("email"))); n != 1 {
								t.Fatalf("dead count %d", n)
							}
						}
						_ = id
					})
				}
			}
			for _, short := range []bool{false, true} {
				sub := "extend"
				if short {
					sub = "short-extend"
				}
				t.Run(sub, func(t *testing.T) {
					e := zfaultEnv(t, name)
					e.faulty.SetEnabled(false)
					e.zput(t, zjob{})
					l := e.claimForFault(t, short)
					e.faulty.SetEnabled(true)
					e.clk.Advance(time.Second)
					l2, err := e.q.Extend(e.ctx, l, time.Minute)
					if err != nil || !l2.Deadline.Equal(zepoch.Add(61*time.Second)) {
						t.Fatalf("extend = %+v, %v", l2, err)
					}
					checkFaulted(t, e)
					if err := e.truth.Complete(e.ctx, l2); err != nil {
						t.Fatalf("complete under the extended lease: %v", err)
					}
				})
			}
			for _, size := range []int{10, InlinePayload + 1} {
				for _, short := range []bool{false, true} {
					sub := "checkpoint"
					if short {
						sub = "short-checkpoint"
					}
					if size > InlinePayload {
						sub += "-blob"
					}
					t.Run(sub, func(t *testing.T) {
						e := zfaultEnv(t, name)
						e.faulty.SetEnabled(false)
						e.zput(t, zjob{})
						l := e.claimForFault(t, short)
						e.faulty.SetEnabled(true)
						e.clk.Advance(time.Second)
						state := bytes.Repeat([]byte("s"), size)
						l2, err := e.q.Checkpoint(e.ctx, l, state, time.Minute)
						if err != nil || !bytes.Equal(l2.Checkpoint, state) {
							t.Fatalf("checkpoint = %v", err)
						}
						checkFaulted(t, e)
						if err := e.truth.Release(e.ctx, l2); err != nil {
							t.Fatalf("release under the checkpointed lease: %v", err)
						}
						next := e.zclaim(t, e.lane0("email", ""), "w2", time.Minute, 1)
						if len(next) != 1 || !bytes.Equal(next[0].Checkpoint, state) {
							t.Fatal("the checkpoint was not stored")
						}
					})
				}
			}
			t.Run("hand-back", func(t *testing.T) {
				e := zfaultEnv(t, name)
				e.faulty.SetEnabled(false)
				e.zput(t, zjob{}, zjob{})
				res, _, err := zshortClaim(e.ctx, e.truth, "email", "w", nil, 1)
				if err != nil || len(res.Jobs) != 1 {
					t.Fatal(err)
				}
				e.faulty.SetEnabled(true)
				got, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, res.Jobs, time.Minute)
				if err != nil || len(got) != 1 || got[0].Short() {
					t.Fatalf("hand back = %+v, %v", got, err)
				}
				checkFaulted(t, e)
				if s, ok := e.laneState(t, e.lane0("email", "")); !ok || s.leased() || s.PtrMs != zepoch.UnixMilli() {
					t.Fatalf("lane after hand back %+v, %v", s, ok)
				}
				if err := e.truth.Complete(e.ctx, got[0]); err != nil {
					t.Fatalf("complete under the promoted lease: %v", err)
				}
			})
			t.Run("hand-back-empty", func(t *testing.T) {
				e := zfaultEnv(t, name)
				e.faulty.SetEnabled(false)
				e.zput(t, zjob{})
				res, _, err := zshortClaim(e.ctx, e.truth, "email", "w", nil, 1)
				if err != nil || len(res.Jobs) != 1 {
					t.Fatal(err)
				}
				if err := e.truth.Complete(e.ctx, res.Jobs[0]); err != nil {
					t.Fatal(err)
				}
				e.faulty.SetEnabled(true)
				if _, err := e.q.Consumer().HandBack(e.ctx, *res.Lane, nil, time.Minute); err != nil {
					t.Fatalf("hand back = %v", err)
				}
				checkFaulted(t, e)
				if _, ok := e.laneState(t, e.lane0("email", "")); ok || e.pointers(t, "email") != 0 {
					t.Fatal("the empty lane was not removed")
				}
			})
			t.Run("extend-pointer", func(t *testing.T) {
				e := zfaultEnv(t, name)
				e.faulty.SetEnabled(false)
				e.zput(t, zjob{})
				res, _, err := zshortClaim(e.ctx, e.truth, "email", "w", nil, 1)
				if err != nil || len(res.Jobs) != 1 {
					t.Fatal(err)
				}
				e.faulty.SetEnabled(true)
				e.clk.Advance(time.Second)
				p2, err := e.q.Consumer().ExtendLane(e.ctx, *res.Lane, 10*time.Second)
				if err != nil || !p2.Deadline.Equal(zepoch.Add(11*time.Second)) {
					t.Fatalf("extend pointer = %+v, %v", p2, err)
				}
				checkFaulted(t, e)
				if s, ok := e.laneState(t, e.lane0("email", "")); !ok || s.PtrMs != p2.Deadline.UnixMilli() || e.pointers(t, "email") != 1 {
					t.Fatalf("lane %+v, %v", s, ok)
				}
			})
		})
	}
}

// claimForFault claims the one job placed with a per-job or a short lease.
func (e *zenv) claimForFault(t *testing.T, short bool) Lease {
	t.Helper()
	if !short {
		return e.zclaim(t, e.lane0("email", ""), "w", time.Minute, 1)[0]
	}
	res, _, err := zshortClaim(e.ctx, e.truth, "email", "w", nil, 1)
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("short claim %+v, %v", res, err)
	}
	return res.Jobs[0]
}
