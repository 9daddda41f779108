package main

import (
	"context"
	"testing"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/quicktest"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestSignUpEnqueuesWelcome is the README's "Testing your own code": a
// user's test of their own enqueue (signUp) and of their handler.
// readme:begin usertest
func TestSignUpEnqueuesWelcome(t *testing.T) {
	ctx := context.Background()
	db := memkv.Open(memkv.Options{}) // the embedded engine: no FDB needed in tests
	if err := signUp(ctx, db, "acme", []byte("user/ada"), []byte("Ada")); err != nil {
		t.Fatal(err)
	}
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Fails listing the send_email jobs that were enqueued, if none matches.
	quicktest.RequireEnqueued(t, q, SendEmail{To: "ada@example.com", Subject: "Welcome"},
		&quicktest.RequireOpts{Priority: quick.Normal, ItemSpace: "acme"})

	// Run the handler on a job, synchronously, without a worker.
	res := quicktest.Work(ctx, t, q, sendEmail, SendEmail{To: "bob@example.com", Subject: "Hi"}, nil)
	if res.Event != quicktest.EventCompleted {
		t.Fatalf("send_email: %s (%v)", res.Event, res.Err)
	}
}

// readme:end
