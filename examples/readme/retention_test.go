package main

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestRetentionRegion: a queue opened as the README's retention region
// keeps a completed send_email job, which Get shows as completed.
func TestRetentionRegion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := memkv.Open(memkv.Options{})
	defer db.Close()
	q, err := openRetaining(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Insert(ctx, SendEmail{To: "ada@example.com", Subject: "Welcome"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "send_email", Holder: "t", Max: 1, Lease: time.Minute})
	if err != nil || len(c.Jobs) != 1 {
		t.Fatalf("claim %+v, %v", c, err)
	}
	if err := q.Complete(ctx, c.Jobs[0]); err != nil {
		t.Fatal(err)
	}
	info, err := q.Get(ctx, res.ID)
	if err != nil || info.State != quick.StateCompleted || info.ExpiresAt.Sub(info.FinishedAt) != 24*time.Hour {
		t.Fatalf("get: %+v, %v", info, err)
	}
}
