package memkv

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
)

// Commits that arrive together are resolved in batches (DB.commit); each
// still behaves as if it had taken the commit lock alone: its own commit
// version and versionstamp, atomic operations applied one after the other,
// and, once Commit returns, a read version at or past it that sees its
// writes.
func TestConcurrentCommitsBatchedAsIfAlone(t *testing.T) {
	db, _ := newTestDB(t)
	const n, rounds = 32, 20
	counter := []byte("counter")
	one := binary.LittleEndian.AppendUint64(nil, 1)
	var wg sync.WaitGroup
	type done struct {
		cv    int64
		stamp string
	}
	results := make([][]done, n)
	errs := make(chan error, n)
	start := make(chan struct{})
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for r := range rounds {
				key := []byte(fmt.Sprintf("k/%02d/%02d", g, r))
				tr := begin(t, db)
				tr.Set(key, key)
				tr.Add(counter, one)
				vs := tr.GetVersionstamp()
				if err := tr.Commit(); err != nil {
					errs <- err
					return
				}
				cv, err := tr.GetCommittedVersion()
				if err != nil {
					errs <- err
					return
				}
				stamp, err := vs.Get()
				if err != nil {
					errs <- err
					return
				}
				results[g] = append(results[g], done{cv, string(stamp)})
				after := begin(t, db)
				rv, err := after.GetReadVersion().Get()
				if err != nil {
					errs <- err
					return
				}
				got, err := after.Get(key).Get()
				if err != nil {
					errs <- err
					return
				}
				if rv < cv || string(got) != string(key) {
					errs <- fmt.Errorf("%s: committed at %d, then read version %d sees %q", key, cv, rv, got)
					return
				}
				after.release()
				tr.release()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var cvs []int64
	stamps := map[string]bool{}
	for _, rs := range results {
		for _, r := range rs {
			cvs = append(cvs, r.cv)
			stamps[r.stamp] = true
		}
	}
	slices.Sort(cvs)
	if len(cvs) != n*rounds || len(slices.Compact(cvs)) != n*rounds || len(stamps) != n*rounds {
		t.Fatalf("%d commits, %d distinct versions, %d distinct versionstamps; want %d of each", len(cvs), len(slices.Compact(cvs)), len(stamps), n*rounds)
	}
	err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		v, err := tr.Get(counter).Get()
		if err != nil {
			return err
		}
		if got := binary.LittleEndian.Uint64(v); got != n*rounds {
			t.Errorf("counter %d, want %d", got, n*rounds)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
