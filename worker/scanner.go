package worker

import (
	"sync"
	"sync/atomic"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/internal/wake"
	"github.com/quickfdb/quickfdb/quick"
)

// One scanner per runner (docs/design.md, "The worker: one scanner per
// runner"). Claim goroutine 0 is the runner's scanner: it alone reads the
// task type's pointer index. Its claims from the index take one lane and
// also return up to one other vested lane per waiting executor, each of
// another zone (quick.ClaimOptions.Scan); it hands those to the executors
// (claim goroutines 1..claimers-1) that wait for work, which claim them
// with quick.ClaimOptions.From in parallel transactions. A lane the scanner
// keeps (it has more vested jobs) goes to a waiting executor too, so the
// scanner goes back to the index at once. An executor with no lane waits
// for the scanner; it never reads the index, so the process's claims in
// flight are on distinct lanes and never race one another for a pointer.
// An enqueue's wake-up wakes the scanner only (waker.go).
//
// An executor that finds its lane taken by another process meanwhile
// (Claimed.Missed) waits for the next scan; one that runs out of work on
// its lane, or lets it go after keepRounds, asks for a scan.
//
// Keys: none of its own (those of quick.Consumer.Claim).

// A candidate handed to an executor stays vested in the index until the
// executor's claim leases it, and the scanner's next scans would see it
// and race the executor for it: in a run of one zone of 16 lanes at 2,000
// jobs/s, 48 of 170 executor claims found their lane taken, by this
// process's own scanner (Claimed.Missed), each a claim wasted and a
// conflict. So the feed remembers the candidates it promised until their
// claims return, and the scanner's claims skip them (ClaimOptions.Skip).

// feedItem is what the scanner hands a waiting executor: a vested lane to
// claim (cand), or a lane the scanner holds and gives away (ptr with
// per-job leases, sl in short-job mode) with the claims already made on it.
type feedItem struct {
	cand   *quick.LaneCandidate
	ptr    *quick.LaneLease
	sl     *shortLane
	rounds int
}

// scanFeed is a runner's hand-over from scanner to executors.
type scanFeed struct {
	// ch holds at most one item per waiting executor (offer): an item is
	// handed over only to an executor that waits for one, never queued
	// where it would go stale. (Buffered, so that an executor between
	// counting itself in waiting and receiving does not miss it.)
	ch chan feedItem
	// waiting counts the executors waiting for an item: how many more
	// lanes the scanner's claims ask the index for.
	waiting atomic.Int32

	// promised holds the candidates handed to executors whose claims have
	// not returned yet (at most one per executor).
	mu       sync.Mutex
	promised []quick.LaneCandidate
}

// promise notes a candidate about to be offered.
func (f *scanFeed) promise(c quick.LaneCandidate) {
	f.mu.Lock()
	f.promised = append(f.promised, c)
	f.mu.Unlock()
}

// settle forgets a promised candidate: its claim returned (or it was
// never handed over).
func (f *scanFeed) settle(c *quick.LaneCandidate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range f.promised {
		if p.ItemSpace == c.ItemSpace && p.Priority == c.Priority && p.Lane == c.Lane {
			f.promised = append(f.promised[:i], f.promised[i+1:]...)
			return
		}
	}
}

// skip is what the scanner's claim must skip: the promised candidates.
func (f *scanFeed) skip() []quick.LaneCandidate {
	if mutant.On("worker.scan-no-skip") {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]quick.LaneCandidate(nil), f.promised...)
}

func newScanFeed() *scanFeed { return &scanFeed{ch: make(chan feedItem, claimers)} }

// offer hands it to a waiting executor, if one waits for it; false if none
// does. It reserves that executor first (waiting counts the executors not
// yet promised an item), so an executor that has taken an item but not yet
// returned from await is never counted for a second one: an item is never
// left in ch with no executor to take it (which also kept Worker.quiet
// false). Only the scanner offers; ch has room for every reservation.
func (f *scanFeed) offer(it feedItem) bool {
	for {
		n := f.waiting.Load()
		if n <= 0 {
			return false
		}
		if f.waiting.CompareAndSwap(n, n-1) {
			break
		}
	}
	select {
	case f.ch <- it:
		return true
	default:
		f.waiting.Add(1) // cannot happen: ch holds claimers items
		return false
	}
}

// scanWidth is how many candidates the scanner's next claim asks for: one
// per waiting executor, and at least one, so that the scanner's every claim
// from the index is a scan, which takes the zone whose turn it is
// (quick/scan.go, zone turns), even when no executor waits.
func (r *runner) scanWidth() int {
	return max(1, int(min(r.feed.waiting.Load(), int32(claimers))))
}

// await is an executor with no lane waiting for the scanner. It asks for a
// scan (the scanner may sleep, having found nothing before this executor
// was free). It reports false when the loop must exit.
func (c *claimer) await() bool {
	r, w := c.r, c.r.w
	r.feed.waiting.Add(1)
	r.signalMore()
	c.park.forever()
	defer c.park.run()
	// An item received was reserved for this executor by offer, which
	// took it out of waiting; at a stop the count no longer matters (the
	// scanner's drain lets go of any item left).
	select {
	case it := <-r.feed.ch:
		c.cand, c.ptr, c.sl, c.rounds = it.cand, it.ptr, it.sl, it.rounds
		return true
	case <-w.stopCh:
		r.feed.waiting.Add(-1)
		return false
	case <-w.bg.Done():
		r.feed.waiting.Add(-1)
		return false
	}
}

// distribute is the scanner after a claim: the lane it kept goes to a
// waiting executor (the scanner goes back to the index), then the other
// vested lanes the claim saw, one each.
func (c *claimer) distribute(res quick.Claimed) {
	r := c.r
	if r.feed.waiting.Load() <= 0 {
		return
	}
	if c.ptr != nil || c.sl != nil {
		if r.feed.offer(feedItem{ptr: c.ptr, sl: c.sl, rounds: c.rounds}) {
			c.ptr, c.sl, c.rounds = nil, nil, 0
		}
	}
	for i := range res.Candidates {
		r.feed.promise(res.Candidates[i])
		if !r.feed.offer(feedItem{cand: &res.Candidates[i]}) {
			r.feed.settle(&res.Candidates[i])
			return
		}
	}
}

// drain, at the scanner's exit, lets go of the lanes left in the feed by
// executors that stopped before taking them.
func (f *scanFeed) drain(r *runner) {
	for {
		select {
		case it := <-f.ch:
			if it.cand != nil {
				f.settle(it.cand)
			}
			if it.ptr != nil || it.sl != nil {
				(&claimer{r: r, ptr: it.ptr, sl: it.sl}).letGo()
			}
		default:
			return
		}
	}
}

// listenLocal has this process's enqueues wake the scanner directly
// (internal/wake.Notify): an enqueue that bumps the task type's wake key
// for a sleeping worker also sends on the waker's channel once its commit
// returns, so the scanner of this process claims without waiting for the
// watch (on a FoundationDB cluster the watch fires about 10 ms after the
// commit). Workers of other processes still wake by the watch. It returns
// the cancel of the subscription.
func (r *runner) listenLocal() func() {
	w := r.w
	if w.cfg.DisableWake || mutant.On("worker.no-local-wake") {
		return func() {}
	}
	return wake.Subscribe(w.q.DB(), w.q.Root().Bytes(), r.taskType, r.waker.fired)
}
