package main

import (
	"bytes"
	"context"
	"errors"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// lockedBuffer is a log output the test reads while the subscriber writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestEventsRegion: the README's subscriber logs a failed job's event.
func TestEventsRegion(t *testing.T) {
	ctx := context.Background()
	q, err := quick.Open(ctx, memkv.Open(memkv.Options{}), tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(worker.Config{Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Register(w, func(context.Context, *worker.Job[SendEmail]) error {
		return errors.New("mailbox full")
	}, worker.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	prev := log.Writer()
	log.SetOutput(&out)
	defer log.SetOutput(prev)
	stop := logFailures(w)
	defer stop()
	if _, err := q.Insert(ctx, SendEmail{To: "ada@example.com"}, nil); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	deadline := time.Now().Add(20 * time.Second) // a failure deadline, not a measured wait
	for !strings.Contains(out.String(), "failed") {
		if time.Now().After(deadline) {
			t.Fatalf("no failure logged; log: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if !strings.Contains(out.String(), "attempt 1: mailbox full") {
		t.Fatalf("log %q", out.String())
	}
}
