package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// The clock check.
//
// Leases are deadlines on the claimers' clocks: a worker whose clock runs a
// third of a lease ahead sees live leases as lapsed and takes their jobs (a
// lane lease, in short-job mode, is the lease of every job it covers). So
// workers compare clocks, at a bounded cost: every worker publishes its
// clock reading and read version in one of clockSlots sample slots (by a
// hash of its ID) and reads the slots back, so a round is one GRV, one
// range read of at most clockSlots keys and two blind Sets (its sample and
// its presence record, presence.go), every clockPeriods heartbeat periods,
// whatever the number of workers. Through read versions (which advance a
// million a second on a cluster) a sample tells what its writer's clock
// reads now (judgeClock). The reference is the middle of the spread of the
// largest group of clocks within twice the limit of each other when that
// group is a strict majority, else the clock of the most senior sample (the
// first to publish); a worker off it by more than the limit, an eighth of
// its shortest lease (handler lease or lane lease), error included, stands
// by: its claims are refused until it agrees again (with a quarter of the
// limit to spare). Until its first round a worker does not claim.
//
// The middle of the spread, not the median (issue 22, a rolling start): a
// fleet whose clocks all fit in twice the limit has every clock within the
// limit of that middle, whatever order its workers joined in, so none
// stands by. With the median of the clocks seen so far, a worker at +2 s
// joining after workers at -2, -1.5 and -0.9 s read 3.5 s and, stood by
// once (against the first one alone), needed three quarters of the limit
// to come back: it stayed out until the rest of the fleet joined. Active
// workers are still at most twice the limit (a quarter of a lease) apart.
//
// Keys: S (1, "zc", slot) for slot < clockSlots: a snapshot range read of
// all and a blind Set of its own; and S (1, "wp", workerID) (presence.go).

// clockSlots bounds the samples a round reads.
const clockSlots = 64

// clockPeriods is the round period in heartbeat periods.
const clockPeriods = 5

// Bounds of one comparison through read versions.
const (
	clockGRVAllowance = 5 * time.Millisecond
	clockTruncation   = time.Millisecond
	clockDriftPerSec  = 100 * time.Microsecond
)

// refuseClockUnknown: the clock check has not run yet.
const refuseClockUnknown = "clock not compared with the other workers' yet"

// clockSample is one published reading.
type clockSample struct {
	WallMs  int64
	Version int64
	Since   int64 // read version of the writer's first round
	Standby bool
	ID      string
}

func (s clockSample) encode() []byte {
	return tuple.Tuple{s.WallMs, s.Version, s.Since, s.Standby, s.ID}.Pack()
}

var errBadSample = errors.New("worker: clock sample does not decode")

// decodeClockSample decodes a sample; anything else is an error, never a
// panic (the slots are shared with every other worker, of any version).
func decodeClockSample(b []byte) (clockSample, error) {
	t, err := tuple.Unpack(b)
	if err != nil {
		return clockSample{}, fmt.Errorf("%w: %w", errBadSample, err)
	}
	if len(t) != 5 {
		return clockSample{}, fmt.Errorf("%w: %d elements", errBadSample, len(t))
	}
	var s clockSample
	var ok [5]bool
	s.WallMs, ok[0] = t[0].(int64)
	s.Version, ok[1] = t[1].(int64)
	s.Since, ok[2] = t[2].(int64)
	s.Standby, ok[3] = t[3].(bool)
	s.ID, ok[4] = t[4].(string)
	for i, o := range ok {
		if !o {
			return clockSample{}, fmt.Errorf("%w: element %d is %T", errBadSample, i, t[i])
		}
	}
	return s, nil
}

// zclock is a worker's clock check.
type zclock struct {
	w     *Worker
	space tuple.Subspace

	mu      sync.Mutex
	changes chan struct{} // closed when the standing changes
	limit   time.Duration
	known   bool
	standby bool
	offset  time.Duration
	bound   time.Duration
	samples int
	since   int64

	loopState park
	// done is closed when run has returned: no round is in flight.
	done chan struct{}
}

func newZclock(w *Worker) *zclock {
	return &zclock{w: w, space: w.q.Root().Sub("zc"), done: make(chan struct{})}
}

// changed is closed at the next change of standing (or the first round):
// every refusing claim goroutine wakes on it.
func (c *zclock) changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changes == nil {
		c.changes = make(chan struct{})
	}
	return c.changes
}

func (c *zclock) setLimit(d time.Duration) {
	c.mu.Lock()
	c.limit = d
	c.mu.Unlock()
}

// state returns whether the first round ran and whether to stand by.
func (c *zclock) state() (known, standby bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known, c.standby
}

// Offset is this worker's clock minus the reference, its bound and the
// samples it used, as of the last round.
func (c *zclock) Offset() (off, bound time.Duration, samples int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset, c.bound, c.samples
}

func (c *zclock) run() {
	defer close(c.done)
	defer c.loopState.forever()
	w := c.w
	period := clockPeriods * w.cfg.HeartbeatPeriod
	for !w.stopping() {
		ctx, cancel := context.WithTimeout(w.bg, extendTimeout)
		err := c.round(ctx)
		cancel()
		if err != nil && w.bg.Err() == nil {
			w.log.Warn("worker: clock check failed; retrying", "err", err)
		}
		d := period
		if err != nil {
			d = w.cfg.HeartbeatPeriod
		}
		timer := w.clk.After(d)
		c.loopState.at(w.clk.Now().Add(d))
		select {
		case <-timer:
		case <-w.stopCh:
			return
		case <-w.bg.Done():
			return
		}
		c.loopState.run()
	}
}

// round publishes this worker's reading and judges its clock.
func (c *zclock) round(ctx context.Context) error {
	w := c.w
	id := w.cfg.ID
	slot := int64(lanes.Of([]byte(id), clockSlots))
	c.mu.Lock()
	since, prevStandby, known, limit := c.since, c.standby, c.known, c.limit
	c.mu.Unlock()
	var (
		now   time.Time
		rv    int64
		peers []clockSample
	)
	b, e := c.space.Range()
	err := w.q.DB().Transact(ctx, func(tr kv.Transaction) error {
		// The clock just before the read version: the pair published is a
		// GRV round trip apart at most.
		now = w.clk.Now()
		v, err := tr.GetReadVersion().Get()
		if err != nil {
			return err
		}
		rv = v
		kvs, err := tr.Snapshot().GetRange(kv.KeyRange{Begin: b, End: e}, kv.RangeOptions{Limit: clockSlots}).GetSliceWithError()
		if err != nil {
			return err
		}
		peers = peers[:0]
		for _, kvp := range kvs {
			s, derr := decodeClockSample(kvp.Value)
			if derr != nil || s.ID == id {
				continue // a bad slot is overwritten by its next writer
			}
			peers = append(peers, s)
		}
		if since == 0 {
			since = rv
		}
		standby := prevStandby || !known
		tr.Set(c.space.Pack(tuple.Tuple{slot}), clockSample{WallMs: now.UnixMilli(), Version: rv, Since: since, Standby: standby, ID: id}.encode())
		// The presence record rides along: no transaction of its own.
		w.presence.write(tr, now)
		return nil
	})
	if err != nil {
		return err
	}
	w.presence.committed()
	maxAge := 3 * clockPeriods * w.cfg.HeartbeatPeriod
	cands := []clockCand{{id: id, since: since, standby: prevStandby}}
	for _, s := range peers {
		if s.Version <= 0 || rv < s.Version {
			continue
		}
		age := time.Duration(rv-s.Version) * time.Microsecond
		if age > maxAge {
			continue // its writer stopped publishing: gone, or stuck
		}
		drift := time.Duration(float64(age) * float64(clockDriftPerSec) / float64(time.Second))
		off := time.UnixMilli(s.WallMs).Add(age).Sub(now)
		cands = append(cands, clockCand{id: s.ID, off: off, bound: 2*clockTruncation + clockGRVAllowance + drift, since: s.Since, standby: s.Standby})
	}
	standby, off, bound := judgeClock(cands, limit, prevStandby && known)
	if mutant.On("worker.skew-standby") {
		standby = false
	}
	c.mu.Lock()
	changed := standby != c.standby || !c.known
	c.known, c.standby, c.offset, c.bound, c.samples, c.since = true, standby, off, bound, len(cands)-1, since
	if changed && c.changes != nil {
		close(c.changes)
		c.changes = nil
	}
	c.mu.Unlock()
	if changed {
		for _, r := range w.snapshotRunners() {
			r.signalBeat() // refusing claim loops look again now
		}
	}
	if changed && (standby || known) {
		w.log.Warn("worker: clock check", "standby", standby, "offset", off, "bound", bound, "samples", len(cands)-1, "limit", limit)
	}
	return nil
}

// clockLimit is how far a worker's clock may be off the reference: an
// eighth of its shortest lease (job or lane lease).
func clockLimit(q *quick.Queue, runners []*runner) time.Duration {
	var limit time.Duration
	for _, r := range runners {
		d := min(r.opts.Lease, q.Options().LaneLeaseTime) / 8
		if limit == 0 || d < limit {
			limit = d
		}
	}
	return limit
}

// clockCand is one clock in the comparison, relative to this worker's.
type clockCand struct {
	id      string
	off     time.Duration
	bound   time.Duration
	since   int64
	standby bool
}

// judgeClock decides whether the first candidate (this worker, offset 0)
// stands by, and returns its estimated offset from the reference and the
// estimate's bound. prev is its standing so far.
func judgeClock(cands []clockCand, limit time.Duration, prev bool) (standby bool, off, bound time.Duration) {
	if len(cands) < 2 || limit <= 0 {
		return false, 0, 0
	}
	sorted := slices.Clone(cands)
	slices.SortFunc(sorted, func(a, b clockCand) int {
		if a.off != b.off {
			if a.off < b.off {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	bestLo, bestN, hi := 0, 0, 0
	window := 2 * limit
	if mutant.On("worker.clock-median") {
		window = limit
	}
	for lo := range sorted {
		for hi < len(sorted) && sorted[hi].off-sorted[lo].off <= window {
			hi++
		}
		if n := hi - lo; n > bestN {
			bestLo, bestN = lo, n
		}
	}
	var ref clockCand
	if 2*bestN > len(sorted) {
		group := sorted[bestLo : bestLo+bestN]
		ref = group[len(group)/2]
		if !mutant.On("worker.clock-median") {
			// The middle of the group's spread (see the top of the file).
			ref.off = group[0].off + (group[len(group)-1].off-group[0].off)/2
		}
		for _, c := range group {
			ref.bound = max(ref.bound, c.bound)
		}
	} else {
		// No majority: the most senior active clock (the first to
		// publish), so that of two workers that disagree only the
		// junior stands by.
		found := false
		for _, activeOnly := range []bool{true, false} {
			for _, c := range cands {
				if activeOnly && c.standby {
					continue
				}
				if !found || seniorClock(c, ref) {
					ref, found = c, true
				}
			}
			if found {
				break
			}
		}
	}
	off, bound = -ref.off, ref.bound
	switch {
	case off.Abs()-bound > limit:
		return true, off, bound
	case bound > limit/2:
		return prev, off, bound // too imprecise to change the standing
	}
	back := limit
	if prev {
		back = limit - limit/4
	}
	return off.Abs()+bound > back, off, bound
}

func seniorClock(a, b clockCand) bool {
	switch {
	case a.since == b.since:
		return a.id < b.id
	case a.since == 0:
		return false
	case b.since == 0:
		return true
	}
	return a.since < b.since
}

// clockRefusal says whether r's claims must wait on the clock check.
func (w *Worker) clockRefusal(r *runner) string {
	if w.zclock != nil {
		known, standby := w.zclock.state()
		if !known {
			return refuseClockUnknown
		}
		if standby {
			return refuseSkew
		}
	}
	return ""
}
