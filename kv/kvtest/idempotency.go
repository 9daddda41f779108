package kvtest

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
)

// Sources: OPT = fdbclient/vexillographer/fdb.options (automatic_idempotency,
// code 505); NAPI = fdbclient/NativeAPI.actor.cpp (Transaction::setOption,
// tryCommit). What the option changes, the resolution of a lost commit reply,
// needs a fault a healthy cluster does not produce: kv.WithFaults models it,
// and kv's own tests hold it to FDB's client there. These cases pin what an
// engine must do itself: accept the option, keep it across Reset and
// OnError, and commit as usual with it.

func idempotencyCases() []Case {
	return []Case{
		{
			Name: "idempotency/automatic-commits",
			Rule: "A transaction with automatic_idempotency commits as any other: the value is stored, GetCommittedVersion is the commit's version and the versionstamp encodes it (OPT 505; NAPI tryCommit only adds the ID's \\xff/SC/ conflict key).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "i/k")
				var setErr error
				vs, cv, err := commitVersionstamped(h, func(tr kv.Transaction) {
					setErr = tr.Options().SetAutomaticIdempotency()
					tr.Set(k, []byte("v"))
				})
				if err := expectNoErr("SetAutomaticIdempotency", setErr); err != nil {
					return err
				}
				if err != nil {
					return err
				}
				if cv <= 0 {
					return fmt.Errorf("GetCommittedVersion = %d after a commit that wrote, want the commit's version", cv)
				}
				if got := int64(binary.BigEndian.Uint64(vs[:8])); got != cv {
					return fmt.Errorf("versionstamp %x encodes version %d, GetCommittedVersion is %d", vs, got, cv)
				}
				return expectStored(h, "value", k, []byte("v"))
			},
		},
		{
			Name: "idempotency/automatic-survives-reset-and-on-error",
			Rule: "SetAutomaticIdempotency set once holds through OnError and Reset, and the transaction commits after each (kv contract: options survive both; FDB drops this one, not persistent in OPT, and the adapter sets it again).",
			Run: func(ctx context.Context, h Harness) error {
				tr, err := newTx(h)
				if err != nil {
					return err
				}
				if err := expectNoErr("SetAutomaticIdempotency", tr.Options().SetAutomaticIdempotency()); err != nil {
					return err
				}
				tr.Set(key(h, "i/discarded"), []byte("v"))
				if err := tr.OnError(kv.ErrNotCommitted); err != nil {
					return fmt.Errorf("OnError(1020) = %v, want nil", err)
				}
				tr.Set(key(h, "i/after-on-error"), []byte("v"))
				if err := expectNoErr("commit after OnError", tr.Commit()); err != nil {
					return err
				}
				tr.Reset()
				tr.Set(key(h, "i/after-reset"), []byte("v"))
				if err := expectNoErr("commit after Reset", tr.Commit()); err != nil {
					return err
				}
				if cv, err := tr.GetCommittedVersion(); err != nil || cv <= 0 {
					return fmt.Errorf("GetCommittedVersion after Reset and commit = %d, %v; want the commit's version", cv, err)
				}
				if err := expectStored(h, "write before OnError", key(h, "i/discarded"), nil); err != nil {
					return err
				}
				if err := expectStored(h, "write after OnError", key(h, "i/after-on-error"), []byte("v")); err != nil {
					return err
				}
				return expectStored(h, "write after Reset", key(h, "i/after-reset"), []byte("v"))
			},
		},
		{
			Name: "idempotency/automatic-retry-loop",
			Rule: "In Transact, the option set on the first attempt holds for the retry after a conflict, which commits once (kv contract; OPT 505).",
			Run: func(ctx context.Context, h Harness) error {
				k := key(h, "i/loop")
				attempts := 0
				err := h.DB.Transact(ctx, func(tr kv.Transaction) error {
					attempts++
					if attempts > maxAttempts {
						return errTooManyAttempts
					}
					if attempts == 1 {
						if err := tr.Options().SetAutomaticIdempotency(); err != nil {
							return err
						}
					}
					if _, err := tr.Get(k).Get(); err != nil {
						return err
					}
					if attempts == 1 {
						if err := conflictWith(h, k, "other"); err != nil {
							return fmt.Errorf("conflicting write: %w", err)
						}
					}
					tr.Set(k, []byte(fmt.Sprintf("attempt %d", attempts)))
					return nil
				})
				if err != nil {
					return fmt.Errorf("Transact: %w", err)
				}
				if attempts != 2 {
					return fmt.Errorf("fn ran %d times, want 2 (one conflict, one success)", attempts)
				}
				return expectStored(h, "value", k, []byte("attempt 2"))
			},
		},
	}
}
