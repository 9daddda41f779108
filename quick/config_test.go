package quick_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// A queue that holds schema-1 job data (the old S (1, "cfg") lane count and
// a schedule key S (1, "s", ...)) is refused at Open with ErrSchema1, and
// Open writes nothing; a queue with only shared state under S (1) (dead
// letters, task types) opens.
func TestOpenRefusesSchema1(t *testing.T) {
	db, space := fdbtest.Open(t)
	ctx := context.Background()
	root := space.Sub(int64(1))
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(root.Pack(tuple.Tuple{"cfg"}), []byte{0x08, 16})
		tr.Set(root.Pack(tuple.Tuple{"t", "email"}), nil)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quick.Open(ctx, db, space, quick.Options{}); err != nil {
		t.Fatalf("open with shared state only: %v", err)
	}
	sched := root.Pack(tuple.Tuple{"s", "email", int64(3), int64(2), int64(1_900_000_000_000), tuple.UUID(quick.NewID(time.Now()))})
	err = db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(sched, []byte{0x08, 0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := dump(t, db, space)
	_, err = quick.Open(ctx, db, space, quick.Options{})
	if !errors.Is(err, quick.ErrSchema1) {
		t.Fatalf("open with a schema-1 schedule key: %v, want ErrSchema1", err)
	}
	if after := dump(t, db, space); after != before {
		t.Fatalf("a refused Open wrote:\n%s\nwant\n%s", after, before)
	}
}

// dump renders every key and value under space.
func dump(t *testing.T, db kv.Database, space tuple.Subspace) string {
	t.Helper()
	var b strings.Builder
	err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		b.Reset()
		bg, en := space.Range()
		kvs, err := tr.GetRange(kv.KeyRange{Begin: bg, End: en}, kv.RangeOptions{}).GetSliceWithError()
		for _, p := range kvs {
			fmt.Fprintf(&b, "%x=%x\n", p.Key, p.Value)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// One tag limit, FDB's: 16 bytes.
func TestClaimTagLimit(t *testing.T) {
	e := newEnv(t, quick.Options{})
	ok := string(make([]byte, quick.MaxTagLen))
	if _, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Tag: "t" + ok[1:]}); err != nil {
		t.Fatalf("a %d-byte tag: %v", quick.MaxTagLen, err)
	}
	if _, err := e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Tag: ok + "x"}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("a %d-byte tag: %v, want ErrInvalidOption", quick.MaxTagLen+1, err)
	}
}
