// Command email sends order confirmations through a queue that delivers
// at least once, and shows that a redelivered job sends no second email.
//
// Each job carries an idempotency key made from the order
// ("order-4127-confirmation"), never from the job: a producer that
// enqueues the same order twice makes two jobs with one key. The handler
//
//  1. looks the key up in the outbox, the application's record in FDB of
//     the email it sent: if it is there, the email went out already and
//     the job completes without sending;
//  2. sends through the provider with the key: like Resend's
//     Idempotency-Key header, a provider that has seen a key returns the
//     first send's message ID and sends nothing (here a fake provider that
//     keeps its keys in FDB, standing for the provider's own storage);
//  3. records the message ID in the outbox in the transaction that
//     completes the job (job.CompleteWith), so the record and the
//     completion commit together or not at all.
//
// Step 1 stops known duplicates without a call to the provider; step 2
// closes the gap step 1 leaves, a worker that dies between the send and
// the record.
//
// The scenario: orders 4128 and 4129 are sent. The producer enqueues 4128
// again (as after a lost reply) and the outbox stops it. worker-a sends
// 4127 and is killed before it completes the job; the job's lease lapses,
// worker-b runs it again, and the provider's key stops the second send. At
// the end the provider has sent exactly one email per order.
//
//	go run ./examples/email
//	go run -tags fdb ./examples/email -cluster-file /etc/foundationdb/fdb.cluster
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/examples/internal/ex"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

// SendEmail is the job: an order's confirmation.
type SendEmail struct {
	Order   int    `json:"order"`
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

// IdempotencyKey names the email, not the job: every job for the order
// carries the same key.
func (m SendEmail) IdempotencyKey() string { return fmt.Sprintf("order-%d-confirmation", m.Order) }

// mailer is the handler and what it needs.
type mailer struct {
	env      *ex.Env
	provider *provider
	outbox   tuple.Subspace // idempotency key -> message ID
	// afterSend, when set, runs after a send and before the job completes;
	// the scenario uses it to kill the worker at that point.
	afterSend func(ctx context.Context, job *worker.Job[SendEmail]) error
}

func (m *mailer) send(ctx context.Context, job *worker.Job[SendEmail]) error {
	key, who := job.Args.IdempotencyKey(), job.Lease.Holder
	prev, err := m.sentAs(ctx, key)
	if err != nil {
		return err
	}
	if prev != "" {
		m.env.Printf("%s: %s is in the outbox as %s: already sent, completing without sending", who, key, prev)
		return nil
	}
	msgID, dup, err := m.provider.Send(ctx, key, job.Args)
	if err != nil {
		return err // retried after a backoff, with the same key
	}
	if dup {
		m.env.Printf("%s: provider already has key %s: nothing sent, the first send was %s (attempt %d)", who, key, msgID, job.Lease.Attempt)
	} else {
		m.env.Printf("%s: provider sent %s to %s (order %d, attempt %d)", who, msgID, job.Args.To, job.Args.Order, job.Lease.Attempt)
	}
	if m.afterSend != nil {
		if err := m.afterSend(ctx, job); err != nil {
			return err
		}
	}
	// Record the message ID and complete the job in one transaction.
	err = job.CompleteWith(ctx, func(tr kv.Transaction) error {
		k := m.outbox.Pack(tuple.Tuple{key})
		v, err := tr.Get(k).Get()
		if err != nil {
			return err
		}
		if v == nil {
			tr.Set(k, []byte(msgID))
		}
		return nil
	})
	if err == nil {
		m.env.Printf("%s: outbox records %s -> %s, committed with the job's completion", who, key, msgID)
	}
	return err
}

// sentAs returns the message ID the outbox holds for key, or "".
func (m *mailer) sentAs(ctx context.Context, key string) (string, error) {
	var id string
	err := m.env.DB.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get(m.outbox.Pack(tuple.Tuple{key})).Get()
		id = string(v)
		return err
	})
	return id, err
}

// provider is a fake email provider with idempotency keys. It keeps its
// keys and its sent mail in the database, as the real one keeps them in
// its own storage, so they outlive the worker that called it.
type provider struct {
	db    kv.Database
	space tuple.Subspace

	mu    sync.Mutex
	calls map[string]int // sends asked for, by key
}

// Send sends m unless key was seen, and returns the message ID of the
// email sent for key and whether it was sent by an earlier call.
func (p *provider) Send(ctx context.Context, key string, m SendEmail) (msgID string, dup bool, err error) {
	p.mu.Lock()
	p.calls[key]++
	p.mu.Unlock()
	var b [4]byte
	_, _ = rand.Read(b[:])
	fresh := "msg-" + hex.EncodeToString(b[:])
	body, err := json.Marshal(m)
	if err != nil {
		return "", false, err
	}
	err = p.db.Transact(ctx, func(tr kv.Transaction) error {
		k := p.space.Pack(tuple.Tuple{"key", key})
		v, err := tr.Get(k).Get()
		if err != nil {
			return err
		}
		if v != nil {
			msgID, dup = string(v), true
			return nil
		}
		msgID, dup = fresh, false
		tr.Set(k, []byte(fresh))
		tr.Set(p.space.Pack(tuple.Tuple{"sent", fresh}), body)
		return nil
	})
	return msgID, dup, err
}

// Sent returns the emails the provider sent, by message ID.
func (p *provider) Sent(ctx context.Context) (map[string]SendEmail, error) {
	out := map[string]SendEmail{}
	err := p.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		clear(out)
		kvs, err := tr.GetRange(kv.PrefixRange(p.space.Pack(tuple.Tuple{"sent"})), kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, e := range kvs {
			t, err := p.space.Unpack(e.Key)
			if err != nil {
				return err
			}
			var m SendEmail
			if err := json.Unmarshal(e.Value, &m); err != nil {
				return err
			}
			out[t[1].(string)] = m
		}
		return nil
	})
	return out, err
}

func (p *provider) Calls(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[key]
}

func main() { ex.Main(run) }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := ex.Parse("email", args, os.Stderr, nil)
	if err != nil {
		return err
	}
	env, err := ex.Open(ctx, f, true, stdout, os.Stderr)
	if err != nil {
		return err
	}
	defer env.Close()
	env.Describe(f)

	m := &mailer{
		env:      env,
		provider: &provider{db: env.DB, space: env.App.Sub("provider"), calls: map[string]int{}},
		outbox:   env.App.Sub("outbox"),
	}
	opts := worker.HandlerOptions{Lease: quick.MinLease}

	// worker-a crashes after sending order 4127, before completing its job.
	crashed := make(chan struct{})
	ma := *m
	ma.afterSend = func(ctx context.Context, job *worker.Job[SendEmail]) error {
		if job.Args.Order != 4127 {
			return nil
		}
		env.Printf("%s: crashes now: the email left, the job is not completed", job.Lease.Holder)
		close(crashed)
		<-ctx.Done() // until killed
		return context.Cause(ctx)
	}
	wa, err := env.NewWorker("worker-a")
	if err != nil {
		return err
	}
	if err := worker.Register(wa, ma.send, opts); err != nil {
		return err
	}
	a := ex.Start(wa)
	defer a.Abort() // a no-op once it was killed

	orders := map[int]string{4127: "ada@example.com", 4128: "grace@example.com", 4129: "edsger@example.com"}
	enqueue := func(order int, why string) (quick.ID, error) {
		res, err := env.Queue.Insert(ctx, SendEmail{Order: order, To: orders[order], Subject: "Your order"}, nil)
		if err == nil {
			env.Printf("producer: enqueued order %d as job %s%s", order, ex.Short(res.ID), why)
		}
		return res.ID, err
	}
	waitGone := func(what string, ids ...quick.ID) error {
		return env.WaitFor(ctx, what, func() (bool, error) { return env.JobsGone(ctx, ids...) })
	}

	// 1. Two orders, one email each.
	id1, err := enqueue(4128, "")
	if err != nil {
		return err
	}
	id2, err := enqueue(4129, "")
	if err != nil {
		return err
	}
	if err := waitGone("orders 4128 and 4129", id1, id2); err != nil {
		return err
	}
	// 2. The producer enqueues 4128 again: a second job, the same key.
	id3, err := enqueue(4128, " again (its first reply was lost): a new job, the same key")
	if err != nil {
		return err
	}
	if err := waitGone("the second job of order 4128", id3); err != nil {
		return err
	}
	// 3. worker-a sends 4127 and dies before completing the job.
	id4, err := enqueue(4127, "")
	if err != nil {
		return err
	}
	select {
	case <-crashed:
	case <-time.After(15 * time.Second):
		return fmt.Errorf("worker-a never sent order 4127")
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := a.Kill(); err != nil {
		return err
	}
	info, err := env.Queue.Get(ctx, id4)
	if err != nil {
		return err
	}
	env.Printf("worker-a killed: job %s stays leased by %s until its lease lapses (%v from now)",
		ex.Short(id4), info.Holder, info.RunAt.Sub(env.Clock.Now()).Round(100*time.Millisecond))

	// 4. worker-b takes the job over once the lease lapses.
	wb, err := env.NewWorker("worker-b")
	if err != nil {
		return err
	}
	if err := worker.Register(wb, m.send, opts); err != nil {
		return err
	}
	b := ex.Start(wb)
	defer b.Abort()
	env.Printf("worker-b started: the job is not runnable until worker-a's lease lapses")
	if err := env.PassUntil(ctx, info.RunAt.Add(100*time.Millisecond)); err != nil {
		return err
	}
	if err := waitGone("order 4127's job", id4); err != nil {
		return err
	}
	if err := b.Stop(ctx); err != nil {
		return err
	}
	return check(ctx, env, m, orders)
}

// check verifies that the provider sent one email per order and that the
// outbox records each.
func check(ctx context.Context, env *ex.Env, m *mailer, orders map[int]string) error {
	sent, err := m.provider.Sent(ctx)
	if err != nil {
		return err
	}
	perOrder := map[int][]string{}
	for id, e := range sent {
		perOrder[e.Order] = append(perOrder[e.Order], id)
	}
	env.Printf("the provider sent %d emails in all:", len(sent))
	for order := 4127; order <= 4129; order++ {
		key := SendEmail{Order: order}.IdempotencyKey()
		rec, err := m.sentAs(ctx, key)
		if err != nil {
			return err
		}
		env.Printf("  order %d: %d email(s) %v to %s; outbox %s -> %s; provider asked %d time(s)",
			order, len(perOrder[order]), perOrder[order], orders[order], key, rec, m.provider.Calls(key))
		if err := ex.Check(len(perOrder[order]) == 1, "order %d: %d emails sent, want 1", order, len(perOrder[order])); err != nil {
			return err
		}
		if err := ex.Check(rec == perOrder[order][0], "order %d: outbox holds %q, want %q", order, rec, perOrder[order][0]); err != nil {
			return err
		}
	}
	// The redelivered 4127 reached the provider, whose key stopped it; the
	// second job of 4128 was stopped by the outbox before the provider.
	if err := ex.Check(m.provider.Calls("order-4127-confirmation") == 2, "order 4127: %d provider calls, want 2 (the crashed run and the redelivery)", m.provider.Calls("order-4127-confirmation")); err != nil {
		return err
	}
	if err := ex.Check(m.provider.Calls("order-4128-confirmation") == 1, "order 4128: %d provider calls, want 1 (the outbox stops the second job)", m.provider.Calls("order-4128-confirmation")); err != nil {
		return err
	}
	if err := ex.Check(len(sent) == 3, "%d emails sent, want 3", len(sent)); err != nil {
		return err
	}
	env.Printf("OK: 4 jobs, 5 runs, 3 emails: one per order")
	return nil
}
