package main

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestMoveRegion: the README's move region carries acme's jobs to the
// other database, where they are claimed; the other tenant stays.
func TestMoveRegion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	here, other := memkv.Open(memkv.Options{}), memkv.Open(memkv.Options{})
	defer here.Close()
	defer other.Close()
	space := tuple.FromTuple(tuple.Tuple{"myapp", "jobs"})
	q, err := quick.Open(ctx, here, space, quick.Options{})
	if err != nil {
		t.Fatal(err)
	}
	acme, err := q.Enqueue(ctx, quick.NewJob{TaskType: "invoice", ItemSpace: "acme"}, quick.NewJob{TaskType: "invoice", ItemSpace: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, quick.NewJob{TaskType: "invoice", ItemSpace: "globex"}); err != nil {
		t.Fatal(err)
	}
	if err := moveAcme(ctx, q, other); err != nil {
		t.Fatal(err)
	}
	to, err := quick.Open(ctx, other, space, quick.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range acme {
		if info, err := to.Get(ctx, e.ID); err != nil || info.ItemSpace != "acme" {
			t.Errorf("acme's job %s at the destination: %+v, %v", e.ID, info, err)
		}
		if _, err := q.Get(ctx, e.ID); !quick.IsNotFound(err) {
			t.Errorf("acme's job %s still at the source: %v", e.ID, err)
		}
	}
	res, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "invoice", Holder: "w", Max: 10})
	if err != nil || len(res.Jobs) != 1 || res.Jobs[0].ItemSpace != "globex" {
		t.Fatalf("claim at the source: %+v, %v; want globex's job alone", res, err)
	}
}
