package worker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

// A worker with a typed handler: the README's quickstart.
func ExampleRegister() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db := memkv.Open(memkv.Options{})
	q, err := quick.Open(ctx, db, tuple.FromTuple(tuple.Tuple{"myapp", "jobs"}), quick.Options{})
	if err != nil {
		panic(err)
	}
	sent := make(chan string, 1)
	w, _ := worker.New(worker.Config{Queue: q})
	worker.Register(w, func(ctx context.Context, job *worker.Job[SendEmail]) error {
		sent <- job.Args.To // an error would retry with backoff
		return nil
	}, worker.HandlerOptions{Concurrency: 20})
	go w.Run(ctx)
	if _, err := q.Insert(ctx, SendEmail{To: "ada@example.com", Subject: "Welcome"}, nil); err != nil {
		panic(err)
	}
	fmt.Println(<-sent)
	cancel()
	<-w.Done()
	// Output: ada@example.com
}
