package memkv

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// TestBankSerializable moves money between accounts from many goroutines
// while auditors sum all balances: under serializable commits every audit
// sees the same total. Latency, snapshot audits, cancellations and watches
// run alongside so the race detector sees every path.
func TestBankSerializable(t *testing.T) {
	const accounts, total = 20, 20 * 1000
	db := Open(Options{Seed: 5, Latency: Latency{
		GRV:    LatencyRange{Max: 200 * time.Microsecond},
		Read:   LatencyRange{Max: 200 * time.Microsecond},
		Commit: LatencyRange{Max: 300 * time.Microsecond},
	}})
	defer db.Close()
	acct := func(i int) []byte { return []byte(fmt.Sprintf("acct/%02d", i)) }
	enc := func(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }
	dec := func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := range accounts {
			tr.Set(acct(i), enc(total/accounts))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for ctx.Err() == nil {
				a, b := r.IntN(accounts), r.IntN(accounts)
				amt := int64(r.IntN(50))
				err := db.Transact(ctx, func(tr kv.Transaction) error {
					fa, fb := tr.Get(acct(a)), tr.Get(acct(b))
					va, err := fa.Get()
					if err != nil {
						return err
					}
					vb, err := fb.Get()
					if err != nil {
						return err
					}
					if a == b {
						return nil
					}
					tr.Set(acct(a), enc(dec(va)-amt))
					tr.Set(acct(b), enc(dec(vb)+amt))
					return nil
				})
				if err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	audit := func(ctx context.Context, snapshot bool) error {
		return db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			if snapshot {
				tr = tr.Snapshot()
			}
			kvs, err := tr.GetRange(kv.PrefixRange([]byte("acct/")), kv.RangeOptions{}).GetSliceWithError()
			if err != nil {
				return err
			}
			var sum int64
			for _, p := range kvs {
				sum += dec(p.Value)
			}
			if len(kvs) != accounts || sum != total {
				return fmt.Errorf("audit saw %d accounts totalling %d", len(kvs), sum)
			}
			return nil
		})
	}
	for a := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := audit(ctx, a == 1); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Watches armed and cancelled, and transactions cancelled mid-flight.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			tr := begin(t, db)
			w := tr.Watch(acct(0))
			go tr.Cancel()
			tr.Commit()
			w.Cancel()
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := audit(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", db.Stats())
}
