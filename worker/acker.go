package worker

import (
	"context"
	"sync"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/quick"
)

// ackReq is a job's ack waiting to commit.
type ackReq struct {
	st  *jobState
	ack quick.Ack
}

// acker commits the worker's acks in batches. There is no timer: a lone ack
// commits at once, and every ack queued while a commit is in flight goes
// into the next quick.Ack call. When acks pile up faster than one commit
// at a time carries them (ackParallelMin queued), up to ackInFlight calls
// commit at once, so the worker never waits on one commit round trip. Under
// load a commit carries many jobs; at rest no ack waits.
type acker struct {
	w      *Worker
	kickCh chan struct{}
	stopCh chan struct{}
	once   sync.Once
	done   chan struct{}

	mu     sync.Mutex
	queue  []ackReq
	busy   int // batches being committed
	wg     sync.WaitGroup
	idleCh chan struct{} // closed when the queue drains; nil while idle

	loopState park
}

func newAcker(w *Worker) *acker {
	return &acker{w: w, kickCh: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
}

func (a *acker) push(reqs ...ackReq) {
	a.mu.Lock()
	a.queue = append(a.queue, reqs...)
	if a.idleCh == nil {
		a.idleCh = make(chan struct{})
	}
	a.mu.Unlock()
	notify(a.kickCh)
}

// pending reports whether acks are queued or committing.
func (a *acker) pending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue) > 0 || a.busy > 0
}

// flush waits until every ack pushed so far has been committed (or failed).
func (a *acker) flush(ctx context.Context) error {
	for {
		a.mu.Lock()
		ch := a.idleCh
		a.mu.Unlock()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-a.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop ends the loop after the queue drains (the caller flushes first).
func (a *acker) stop() {
	a.once.Do(func() { close(a.stopCh) })
	<-a.done
}

// ackInFlight bounds the ack commits in flight at once.
const ackInFlight = 4

// ackParallelMin is how many acks must be queued for a commit to start
// while another is in flight: below it they wait for the next round, so a
// moderate load still commits in few, large batches.
const ackParallelMin = 64

// ackBatchMax bounds one quick.Ack call's batch when several commit at once.
const ackBatchMax = 500

func (a *acker) run() {
	defer close(a.done)
	defer a.wg.Wait()
	defer a.loopState.forever()
	w := a.w
	for {
		a.mu.Lock()
		if len(a.queue) > 0 && (a.busy == 0 || a.busy < ackInFlight && len(a.queue) >= ackParallelMin) {
			n := min(len(a.queue), ackBatchMax)
			batch := a.queue[:n:n]
			a.queue = a.queue[n:]
			if len(a.queue) == 0 {
				a.queue = nil
			}
			a.busy++
			a.mu.Unlock()
			a.loopState.run()
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.commit(batch)
				a.mu.Lock()
				a.busy--
				a.mu.Unlock()
				notify(a.kickCh)
			}()
			continue
		}
		if len(a.queue) == 0 && a.busy == 0 && a.idleCh != nil {
			close(a.idleCh)
			a.idleCh = nil
		}
		a.mu.Unlock()
		a.loopState.forever()
		select {
		case <-a.kickCh:
		case <-a.stopCh:
			return
		case <-w.bg.Done():
			return
		}
	}
}

// commit acks a batch in one quick.Ack call (500 acks a transaction). A
// failed call is retried once for the acks it did not reach; what still
// fails is left to lapse, and its job runs again.
func (a *acker) commit(batch []ackReq) {
	w := a.w
	if mutant.On("worker.ack-batching") && len(batch) > 1 {
		// Deliberate break (internal/mutant): every ack in its own commit.
		for i := range batch {
			a.commit(batch[i : i+1])
		}
		return
	}
	for attempt := 0; len(batch) > 0; attempt++ {
		acks := make([]quick.Ack, len(batch))
		for i, req := range batch {
			acks[i] = req.ack
		}
		res, err := w.q.Ack(w.bg, acks...)
		w.stats.ackBatches.Add(1)
		for i := range res {
			batch[i].st.acked(batch[i].ack, res[i], nil)
		}
		batch = batch[len(res):]
		// With every result in, err only joins the lost leases, which
		// acked has just handled.
		if len(batch) == 0 || err == nil || w.bg.Err() != nil {
			return
		}
		if attempt == 1 {
			for _, req := range batch {
				req.st.acked(req.ack, quick.AckResult{}, err)
			}
			return
		}
	}
}

// take removes from the queue up to quick.MaxClaimAcks acks that may join
// a claim of r's task type (quick.AckJoinsClaim), within the claim's ack
// budget, for that claim to carry (issue 23: one commit for a round of
// acks and the next claim, docs/design.md "Acks in the claim's commit").
// They count as a batch in flight until settleTaken, so flush still waits
// for them. It returns nil when none is queued.
func (a *acker) take(r *runner) []ackReq {
	c := a.w.q.Consumer()
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []ackReq
	left := a.queue[:0]
	bytes := 0
	for i, req := range a.queue {
		if len(out) < quick.MaxClaimAcks && req.st.r == r && quick.AckJoinsClaim(req.ack) {
			if n := c.ClaimAckCost(req.ack); bytes+n <= quick.ClaimAckBudget {
				bytes += n
				out = append(out, req)
				continue
			}
		}
		left = append(left, a.queue[i])
	}
	clear(a.queue[len(left):])
	a.queue = left
	if len(a.queue) == 0 {
		a.queue = nil
	}
	if len(out) > 0 {
		a.busy++
	}
	return out
}

// settleTaken records the outcome of the acks a claim carried: res holds
// their results when the claim committed (err nil). A claim that failed
// applied none of them: they go back to the queue and commit on their own.
// (One whose commit is unknown may have applied them; the acker's retry then
// finds their keys gone and reports the leases lost, and the jobs, done,
// are not run again.)
func (a *acker) settleTaken(reqs []ackReq, res []quick.AckResult, err error) {
	if len(reqs) == 0 {
		return
	}
	if err == nil && len(res) == len(reqs) {
		a.w.stats.claimAcks.Add(int64(len(reqs)))
		for i, req := range reqs {
			req.st.acked(req.ack, res[i], nil)
		}
	} else {
		a.mu.Lock()
		a.queue = append(a.queue, reqs...)
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.busy--
	a.mu.Unlock()
	notify(a.kickCh)
}
