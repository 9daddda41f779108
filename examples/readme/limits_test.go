package main

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestLimitsRegion: the README's limits region sets the task type's
// default and acme's override, which GetLimits reads back.
func TestLimitsRegion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := limitInvoices(ctx, q); err != nil {
		t.Fatal(err)
	}
	acme, err := q.GetLimits(ctx, "invoice", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if want := (quick.Limits{Concurrency: 2, Rate: 10, Burst: 5, Weight: 3}); acme.Effective != want {
		t.Errorf("acme's limits = %+v, want %+v", acme.Effective, want)
	}
	other, err := q.GetLimits(ctx, "invoice", "other")
	if err != nil {
		t.Fatal(err)
	}
	if other.Effective.Concurrency != 20 {
		t.Errorf("another tenant's concurrency = %d, want the default 20", other.Effective.Concurrency)
	}
}
