package kvtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/kvtest"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// TestSuiteCatchesBrokenEngines shows that the suite is not vacuous: memkv
// wrapped with one deliberate FDB violation at a time must fail the cases
// that pin the violated rule.
func TestSuiteCatchesBrokenEngines(t *testing.T) {
	mutations := []struct {
		name  string
		tx    func(tr kv.Transaction) kv.Transaction
		noTry bool // Transact without a retry loop
		catch []string
	}{
		{
			name:  "snapshot reads add conflicts",
			tx:    func(tr kv.Transaction) kv.Transaction { return &snapshotIsSerializable{tr} },
			catch: []string{"conflict/point/snapshot-read", "conflict/range/snapshot"},
		},
		{
			name:  "Add is a read-modify-write",
			tx:    func(tr kv.Transaction) kv.Transaction { return &addReads{tr} },
			catch: []string{"conflict/atomic-add-concurrent"},
		},
		{
			name:  "limited range reads conflict on the whole range",
			tx:    func(tr kv.Transaction) kv.Transaction { return &fullRangeConflict{tr} },
			catch: []string{"conflict/range/limited-forward-past-last", "conflict/range/limited-reverse-before-last"},
		},
		{
			name:  "blind writes conflict",
			tx:    func(tr kv.Transaction) kv.Transaction { return &writesRead{tr} },
			catch: []string{"conflict/blind-writes", "conflict/write-write"},
		},
		{
			name:  "Max compares bytes",
			tx:    func(tr kv.Transaction) kv.Transaction { return &maxIsByteMax{tr} },
			catch: []string{"atomic/max/committed", "atomic/max/ryw"},
		},
		{
			name:  "missing keys read as empty",
			tx:    func(tr kv.Transaction) kv.Transaction { return &missingIsEmpty{tr} },
			catch: []string{"range/nil-vs-empty-value", "ryw/get-after-clear"},
		},
		{
			name: "read version taken at creation",
			tx: func(tr kv.Transaction) kv.Transaction {
				tr.GetReadVersion().Get()
				return tr
			},
			catch: []string{"version/lazy", "conflict/explicit/read-key-lazy-read-version"},
		},
		{
			name:  "watches fire at once",
			tx:    func(tr kv.Transaction) kv.Transaction { return &watchFiresAtOnce{tr} },
			catch: []string{"watch/no-change-no-fire", "watch/compares-own-write", "watch/cancel"},
		},
		{
			name:  "retry limit ignored",
			tx:    func(tr kv.Transaction) kv.Transaction { return &noRetryLimit{tr} },
			catch: []string{"retry/retry-limit"},
		},
		{
			name:  "Transact does not retry",
			tx:    func(tr kv.Transaction) kv.Transaction { return tr },
			noTry: true,
			catch: []string{"retry/conflict-retried", "retry/commit-unknown-result"},
		},
	}
	byName := map[string]kvtest.Case{}
	for _, c := range kvtest.Cases() {
		byName[c.Name] = c
	}
	for _, m := range mutations {
		t.Run(strings.ReplaceAll(m.name, " ", "_"), func(t *testing.T) {
			for _, name := range m.catch {
				c, ok := byName[name]
				if !ok {
					t.Fatalf("no case %q", name)
				}
				clk := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
				inner := memkv.Open(memkv.Options{Clock: clk})
				db := &brokenDB{inner: inner, wrap: m.tx, noRetry: m.noTry}
				h := kvtest.Harness{DB: db, Prefix: []byte("broken\x00"), Advance: clk.Advance, Engine: "memkv"}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := c.Run(ctx, h)
				cancel()
				inner.Close()
				if err == nil {
					t.Errorf("case %s passed on an engine where %s", name, m.name)
				} else {
					t.Logf("case %s caught it: %v", name, err)
				}
			}
		})
	}
}

type brokenDB struct {
	inner   *memkv.DB
	wrap    func(kv.Transaction) kv.Transaction
	noRetry bool
}

func (d *brokenDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.inner.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return d.wrap(tr), nil
}

func (d *brokenDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	if d.noRetry {
		if err := fn(tr); err != nil {
			return err
		}
		return tr.Commit()
	}
	return kv.Retry(ctx, tr, fn)
}

func (d *brokenDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	tr, err := d.CreateTransaction()
	if err != nil {
		return err
	}
	return kv.RetryRead(ctx, tr, fn)
}

type snapshotIsSerializable struct{ kv.Transaction }

func (t *snapshotIsSerializable) Snapshot() kv.ReadTransaction { return t.Transaction }

type addReads struct{ kv.Transaction }

func (t *addReads) Add(k, p []byte) {
	t.Transaction.Get(k).Get()
	t.Transaction.Add(k, p)
}

type fullRangeConflict struct{ kv.Transaction }

func (t *fullRangeConflict) GetRange(r kv.KeyRange, o kv.RangeOptions) kv.RangeResult {
	t.Transaction.AddReadConflictRange(r)
	return t.Transaction.GetRange(r, o)
}

type writesRead struct{ kv.Transaction }

func (t *writesRead) Set(k, v []byte) {
	t.Transaction.AddReadConflictKey(k)
	t.Transaction.Set(k, v)
}

type maxIsByteMax struct{ kv.Transaction }

func (t *maxIsByteMax) Max(k, p []byte) { t.Transaction.Atomic(kv.MutationByteMax, k, p) }

type missingIsEmpty struct{ kv.Transaction }

func (t *missingIsEmpty) Get(k []byte) kv.Future[[]byte] { return emptyFuture{t.Transaction.Get(k)} }

type emptyFuture struct{ kv.Future[[]byte] }

func (f emptyFuture) Get() ([]byte, error) {
	v, err := f.Future.Get()
	if err == nil && v == nil {
		v = []byte{}
	}
	return v, err
}

type watchFiresAtOnce struct{ kv.Transaction }

func (t *watchFiresAtOnce) Watch(k []byte) kv.Watch { return firedWatch{t.Transaction.Watch(k)} }

type firedWatch struct{ kv.Watch }

func (firedWatch) Wait(ctx context.Context) error { return nil }

type noRetryLimit struct{ kv.Transaction }

func (t *noRetryLimit) Options() kv.TransactionOptions {
	return ignoreRetryLimit{t.Transaction.Options()}
}

type ignoreRetryLimit struct{ kv.TransactionOptions }

func (ignoreRetryLimit) SetRetryLimit(int64) error { return nil }
