package quick_test

import (
	"context"
	"errors"
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/quick"
)

// A queue opened with a lane count other than the stored one fails; zero
// adopts the stored count.
func TestOpenRefusesLaneMismatch(t *testing.T) {
	db, space := fdbtest.Open(t)
	ctx := context.Background()
	q, err := quick.Open(ctx, db, space, quick.Options{Lanes: 8})
	if err != nil || q.Lanes() != 8 {
		t.Fatalf("create: %v", err)
	}
	if _, err := quick.Open(ctx, db, space, quick.Options{Lanes: 16}); !errors.Is(err, quick.ErrConfigMismatch) {
		t.Fatalf("reopen with 16 lanes: %v, want ErrConfigMismatch", err)
	}
	q, err = quick.Open(ctx, db, space, quick.Options{})
	if err != nil || q.Lanes() != 8 || q.Options().Lanes != 8 {
		t.Fatalf("reopen with Lanes 0: %v; want the stored 8 lanes", err)
	}
	if q, err = quick.Open(ctx, db, space, quick.Options{Lanes: 8}); err != nil {
		t.Fatalf("reopen with the same count: %v", err)
	}
	other := space.Sub("new")
	if q, err = quick.Open(ctx, db, other, quick.Options{}); err != nil || q.Lanes() != 16 {
		t.Fatalf("new queue with Lanes 0: %v, want the default 16", err)
	}
	if _, err := quick.Open(ctx, db, other, quick.Options{Lanes: -1}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("negative lanes: %v", err)
	}
}

// One tag limit, FDB's: 16 bytes.
func TestClaimTagLimit(t *testing.T) {
	e := newEnv(t, quick.Options{})
	ok := string(make([]byte, quick.MaxTagLen))
	if _, err := e.q.Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Tag: "t" + ok[1:]}); err != nil {
		t.Fatalf("a %d-byte tag: %v", quick.MaxTagLen, err)
	}
	if _, err := e.q.Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Tag: ok + "x"}); !errors.Is(err, quick.ErrInvalidOption) {
		t.Fatalf("a %d-byte tag: %v, want ErrInvalidOption", quick.MaxTagLen+1, err)
	}
}
