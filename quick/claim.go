package quick

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// Claims (zone.go has the design, consumer.go the API).
//
// A claim takes one lane from the task type's pointer index (acquire: read
// a few pointers from a random place among the oldest vested ones, pick
// one at random, lease it), reads
// the first Max+1+zclaimAllowance keys of that lane in vesting order, takes
// the vested ones with per-job leases (clear the key, set it again at
// now+Lease with a new token), and hands the lane back with its next
// vesting time in the same transaction. It reads what it takes: about one
// job key per job taken, plus the peeked pointers (1 + Peek, or 2 × Peek
// per priority) and the picked lane's state, shared by the batch, whatever
// the backlog.

// zclaimAllowance is how many keys a lane read takes beyond Max+1, so that
// a few exhausted or corrupt entries met on the way (dead-lettered or
// quarantined, without a slot) do not shrink the batch.
const zclaimAllowance = 3

// Bounds of one claim by construction (issue 22, item 5): whatever Max
// and MaxBytes ask, a claim reads at most zclaimMaxJobs+1+zclaimAllowance
// job keys and its budget (claimBudget, against min(MaxBytes,
// zclaimTxBytes)) counts, per job, what its transaction carries
// (zclaimJobBytes): the payload and checkpoint returned, and the keys it
// clears and sets, the value it rewrites (unique key and last error
// included) and the conflict ranges it adds. FDB refuses a transaction over
// 10 MB (2101) on every retry.
const (
	zclaimMaxJobs = 1000
	zclaimTxBytes = 5 << 20
)

// zclaimJobBytes is what taking (or dead-lettering) a job of key key and
// stored value of vlen bytes adds to a claim's transaction besides the
// payload and checkpoint returned: the clear of its key, the set of the
// moved key with the rewritten value (the holder's name and lease fields
// added), and the read- and write-conflict ranges of both keys (a key and
// its successor each).
func zclaimJobBytes(key []byte, vlen int, holder string) int {
	if mutant.On("quick.claim-bytes") {
		return 0
	}
	return 7*len(key) + vlen + len(holder) + 64
}

// Claim leases up to opts.Max (at most 1000) vested jobs of a task type,
// within opts.MaxBytes (at most 5 MB), which here counts the keys and
// values the claim writes and its conflict ranges besides the payloads and
// checkpoints it returns: it takes a lane from the pointer index (or
// continues on opts.Lane), takes that lane's vested jobs with per-job
// leases, and
// hands the lane back with its next vesting time unless opts.Keep holds it.
//
// A lane holds jobs of one priority: acquire takes High lanes before
// Normal before Low, and within a lane the longest vested job comes first. A job whose attempts were all spent by holders
// that vanished is dead-lettered instead (and the task type's
// DeadLetterHook runs in the claim's transaction); an entry that does not
// decode is quarantined (S (1, "x", ...)) and never blocks the jobs behind
// it. A lane leased in short-job mode (TaskTypeOptions.ShortJobs, not
// Lapsed) is worked by takeShort instead.
//
// The result: Jobs taken; More when the lane still has vested jobs (come
// back at once); Lane when Keep held the lane (pass it as
// opts.Lane); NextVest, when no job was taken, the vesting time of the
// earliest pointer seen (sleep until then), or now when the lane taken or
// the pointers cleared as stale yielded nothing but another look may find
// work; zero when the index holds no pointer.
//
// Round trips: the pointer index (one, two when the oldest vested entries
// moved to another second's new work), then the picked lane's state and its keys together (a third
// only when the first pick was stale, or a lapsed short-job lane is
// counted), then the commit.
//
// Keys: acquire's (per priority two snapshot range reads of S (2, "p",
// type, prio), the head and the oldest vested entries, limited to Peek; a
// snapshot read of the picked lane's state, a
// read-conflict key on the chosen lane state, writes of it and its
// pointer) or, with opts.Lane, a read of its lane state; a snapshot
// range read of Z (0, prio, lane) of at most Max+1+zclaimAllowance keys
// and a snapshot read of Z (2); snapshot reads of Z (3, id) and Z (4, id)
// for jobs whose payload or checkpoint is not inline; per job taken a
// read-conflict key, a clear and a set of its key (and S (2, "i", id) when
// trackable); a read-conflict range over the lane before its next vesting
// time, and the lane state and pointer written or cleared (releaseLane).
// In short-job mode, takeShort's keys instead; and a takeover of a lapsed
// short-job lease first those of countLapsedShort.
//
// Tenant limits (limits.go, limitgate.go): once a second per process and
// task type, a snapshot range read of S (1, "tl", type) beside the index's
// reads; for a tenant with a concurrency limit or a rate, the reads of
// gateRead beside the lane's (its running count, first slots, rate state),
// and the writes of commit (a slot per job, the count, the rate state), or,
// when the tenant may start nothing, of park instead of the lane's. A
// weight only shapes the pick (pickIndex).
//
// Acks carried by the claim (opts.Acks, claimacks.go): per ack, those of
// zackTx (the job key read serializably; the keys zfinishTx clears and
// writes), in the claim's transaction.
func (c *Consumer) Claim(ctx context.Context, opts ClaimOptions) (Claimed, error) {
	q := c.q
	opts, err := q.claimDefaults(opts)
	if err != nil {
		return Claimed{}, fmt.Errorf("quick: claim %s: %w", opts.TaskType, err)
	}
	var res Claimed
	now := q.Now()
	planned := q.plan(opts.Acks)
	err = q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		if err := setClaimOptions(tr, opts); err != nil {
			return err
		}
		// An earlier attempt may have committed: its dead letters are
		// then gone from the lane, and its leases are this claim's.
		var carried []ID
		if maybeCommitted {
			var err error
			if carried, err = q.deadAt(tr, res.deadIDs, now); err != nil {
				return err
			}
			if len(res.Jobs) > 0 {
				mine, err := q.zclaimedBefore(tr, res)
				if err != nil {
					return err
				}
				if len(mine) > 0 {
					// The earlier attempt committed, its acks with it.
					res.Jobs, res.deadIDs, res.DeadLettered = mine, carried, len(carried)
					return nil
				}
			}
		}
		var prevAcked []AckResult
		if maybeCommitted {
			prevAcked = res.Acked
		}
		r, err := q.claimZoneTx(tr, opts, now)
		if err != nil {
			if maybeCommitted && opts.Lane != nil && IsLaneLost(err) {
				// The earlier attempt handed the lane back; it took
				// nothing still held. Its acks are checked again here:
				// a lane lost to another holder means it did not commit.
				acked, err := q.claimAcks(tr, planned, prevAcked)
				if err != nil {
					return err
				}
				res = Claimed{deadIDs: carried, DeadLettered: len(carried), Acked: acked}
				return nil
			}
			return err
		}
		if r.Acked, err = q.claimAcks(tr, planned, prevAcked); err != nil {
			return err
		}
		r.deadIDs = append(r.deadIDs, carried...)
		r.DeadLettered = len(r.deadIDs)
		res = r
		return nil
	})
	if err != nil {
		if kv.IsMaybeCommitted(err) {
			if opts.Lane != nil {
				// The caller held this lane before the claim and holds it
				// still, whatever the claim did: in short-job mode the
				// jobs it handed out earlier run under it, and handing it
				// back would let another worker run them again at once.
				// Only the caller may hand it back.
				res.Lane = nil
			}
			q.releaseZoneUnknown(ctx, res, opts.Timeout)
		}
		return Claimed{}, fmt.Errorf("quick: claim %s: %w", opts.TaskType, err)
	}
	return res, nil
}

// releaseZoneUnknown hands back what a claim whose outcome is unknown may
// have taken (see releaseUnknown): its leases, and the lane it kept.
// Where the claim did not commit the token checks fail and nothing
// changes.
func (q *Queue) releaseZoneUnknown(ctx context.Context, res Claimed, timeout time.Duration) {
	if len(res.Jobs) > 0 {
		q.releaseUnknown(ctx, res.Jobs, timeout)
	}
	if res.Lane != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		if err := q.Consumer().ReleaseLane(rctx, *res.Lane); err != nil && !IsLaneLost(err) {
			q.opts.Logger.Warn("quick: could not hand back the lane of a claim whose outcome is unknown; it returns when its lease lapses",
				"lane", res.Lane.lane.String(), "err", err)
		}
	}
}

// claimDefaults fills in a claim's defaults and checks its options.
func (q *Queue) claimDefaults(o ClaimOptions) (ClaimOptions, error) {
	if err := validTaskType(o.TaskType); err != nil {
		return o, err
	}
	if o.Holder == "" || len(o.Holder) > maxHolderLen {
		return o, fmt.Errorf("%w: claim needs a Holder of 1 to %d bytes", ErrInvalidOption, maxHolderLen)
	}
	if o.Max <= 0 {
		o.Max = 1
	}
	if o.Lease == 0 {
		o.Lease = defaultLease
	}
	if err := q.checkLease(o.Lease); err != nil {
		return o, err
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 4 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if len(o.Tag) > MaxTagLen {
		return o, fmt.Errorf("%w: tag %q is over %d bytes", ErrInvalidOption, o.Tag, MaxTagLen)
	}
	if o.Max > zclaimMaxJobs && !mutant.On("quick.claim-max") {
		o.Max = zclaimMaxJobs // More says when the lane had more
	}
	if o.Peek < 0 {
		return o, fmt.Errorf("%w: negative Peek %d", ErrInvalidOption, o.Peek)
	}
	if o.Peek == 0 {
		o.Peek = defaultPeek
	}
	if err := checkFrom(o); err != nil {
		return o, err
	}
	if err := q.checkClaimAcks(o); err != nil {
		return o, err
	}
	if p := o.Lane; p != nil {
		if p.token == 0 || p.lane.z.space.Bytes() == nil {
			return o, fmt.Errorf("%w: the Lane was not returned by a claim", ErrInvalidOption)
		}
		if p.TaskType != o.TaskType {
			return o, fmt.Errorf("%w: the Lane is a lane of %q, not %q", ErrInvalidOption, p.TaskType, o.TaskType)
		}
	}
	return o, nil
}

// zclaimedBefore returns the leases of an earlier attempt's result that
// are this claim's: the per-job leases whose keys hold their tokens, or, for
// jobs handed out in short-job mode, those whose keys hold their tokens if
// the attempt's lane lease is held. A short hand-out writes nothing to the
// job keys (their tokens stay what they were, but for a lapsed per-job
// lease's, which it clears), so the keys alone do not tell: the lane state
// must hold the attempt's token and deadline, and the lane's hand-out mark
// the attempt's last job. Trusting the job keys there
// took an attempt that never committed as this claim's, and its jobs ran
// under a lane lease nobody held while another worker leased the lane and
// handed them out again.
//
// Keys: for short-job mode, reads Z (1, prio, lane) and Z (5, prio, lane)
// (serializable); then those of zstillHeld.
func (q *Queue) zclaimedBefore(tr kv.Transaction, res Claimed) ([]Lease, error) {
	if p := res.Lane; p != nil && p.Short && !p.Lapsed {
		s, err := q.checkHold(tr, p)
		if IsLaneLost(err) || err == nil && s.PtrMs != p.Deadline.UnixMilli() {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		// A hand-out commits its mark (takeShort): without it the attempt
		// did not commit, and taking its jobs as handed out would leave
		// their runs uncounted should this holder die.
		last := res.Jobs[len(res.Jobs)-1]
		v, err := tr.Get(p.lane.handoutKey()).Get()
		if err != nil {
			return nil, err
		}
		if tok, vestMs, id, ok := parseHandoutMark(v); !ok || tok != p.token || vestMs != last.zl.vestMs || id != last.ID {
			return nil, nil
		}
	}
	return q.zstillHeld(tr, res.Jobs)
}

// zstillHeld returns the zones leases whose keys hold their tokens.
func (q *Queue) zstillHeld(tr kv.Transaction, ls []Lease) ([]Lease, error) {
	fs := make([]kv.Future[[]byte], len(ls))
	for i, l := range ls {
		fs[i] = tr.Get(l.zl.lane.jobKey(l.zl.vestMs, l.ID))
	}
	var out []Lease
	for i, f := range fs {
		v, err := f.Get()
		if err != nil {
			return nil, err
		}
		var jv zjobValue
		if v != nil && jv.unmarshal(v) == nil && jv.Token == ls[i].zl.v.Token {
			out = append(out, ls[i])
		}
	}
	return out, nil
}

// claimZoneTx is one attempt of Claim.
func (q *Queue) claimZoneTx(tr kv.Transaction, opts ClaimOptions, now time.Time) (Claimed, error) {
	var res Claimed
	var p LaneLease
	var read *laneRead // the lane's keys, read beside its state by acquire
	// The tenant's limits (limitgate.go): g gates the claim when the
	// tenant has a concurrency or rate limit; its reads go beside the
	// lane's.
	vl := q.loadView(tr, opts.TaskType, now)
	var g *gate
	var lim Limits
	if opts.Lane != nil {
		p = *opts.Lane
		if !p.Short || p.Lapsed {
			// A kept lane claimed with per-job leases: read its keys beside
			// its state, one round trip instead of two per claim of a
			// drain (takeShort reads from the holder's cursor instead).
			read = q.readLane(tr, opts, p.lane, false, now)
		}
		if view := vl.get(); vl.err != nil {
			return res, vl.err
		} else if !view.none() {
			var err error
			if lim, err = q.effectiveLimits(tr, view, p.lane); err != nil {
				return res, errGated(p.ItemSpace, err)
			}
			g = q.gateRead(tr, lim, p.lane)
		}
		s, err := q.checkHold(tr, &p)
		if err != nil {
			if derr := read.discard(); derr != nil {
				return res, derr
			}
			return res, err
		}
		// The lane stays this worker's for another LaneLease, renewed
		// only once half of it is spent: a renewal writes the lane state,
		// which every short-job ack of the lane reads serializably, so
		// renewing on every claim made the lane's acks in flight conflict
		// (0.01-0.02 conflicts per job, measured with the worker's drain
		// benchmark) for no gain.
		if s.PtrMs-now.UnixMilli() < q.opts.LaneLeaseTime.Milliseconds()/2 && !mutant.On("quick.keep-renew") {
			old := s.PtrMs
			deadline := now.Add(q.opts.LaneLeaseTime).Truncate(time.Millisecond)
			s.PtrMs = deadline.UnixMilli()
			q.movePointer(tr, p.lane, old, s)
			p.Deadline = deadline
		} else {
			p.Deadline = time.UnixMilli(s.PtrMs)
		}
	} else {
		short := q.opts.TaskTypes[opts.TaskType].ShortJobs
		var found bool
		var nextMs int64
		var err error
		var preErr error
		pre := func(l laneRef) *laneRead {
			s := short
			if view := vl.get(); !view.none() {
				if lim, preErr = q.effectiveLimits(tr, view, l); preErr == nil {
					// A tenant under a concurrency limit runs with per-job
					// leases, whose slots follow them.
					s = s && lim.concurrency() == 0
					g = q.gateRead(tr, lim, l)
				}
			}
			return q.readLane(tr, opts, l, s, now)
		}
		if opts.From != nil {
			// A lane a scan saw (scan.go): no index read.
			p, found, read, err = q.acquireCandidate(tr, opts, short, now, pre)
		} else {
			var sc *scanState
			if opts.Scan > 0 {
				sc = newScanState(opts.Skip)
			}
			p, found, nextMs, read, err = q.acquireWith(tr, opts.TaskType, opts.Holder, scanPeek(opts), opts.PeekHead, q.opts.LaneLeaseTime, short, now, pre, vl.get, sc)
			if found && opts.Scan > 0 {
				res.Candidates = q.candidatesOf(opts.TaskType, sc.seen, p.lane, opts.Scan)
			}
		}
		vl.get() // issued before the index's read: it is in by now
		if err == nil && vl.err != nil {
			err = vl.err
		}
		if err == nil && preErr != nil {
			err = errGated(p.ItemSpace, preErr)
		}
		if err == nil && !found && opts.From != nil {
			res.Missed, res.NextVest = true, now
			return res, nil
		}
		if err != nil {
			return res, err
		}
		if !found {
			if nextMs > 0 {
				res.NextVest = time.UnixMilli(nextMs)
			}
			return res, nil
		}
		if view := vl.get(); !view.none() && (g == nil || g.itemSpace != p.ItemSpace) {
			// The first pick was stale: the gate is the tenant's taken.
			if lim, err = q.effectiveLimits(tr, view, p.lane); err != nil {
				return res, errGated(p.ItemSpace, err)
			}
			g = q.gateRead(tr, lim, p.lane)
		}
		if lim.concurrency() > 0 && p.Short && p.unsaved {
			p.Short = false // per-job leases, whose slots follow them
		}
		if p.Lapsed && p.lapsedShort != 0 {
			// The lapsed holder's hand-outs ran, uncounted: count them
			// before the per-job claim below takes them. It rewrites job
			// keys of the lane, which the lane read issued before does
			// not show: the claim reads the lane again.
			if err := read.discard(); err != nil {
				return res, err
			}
			read = nil
			if err := q.countLapsedShort(tr, &p); err != nil {
				return res, err
			}
		}
	}
	takeShort := p.Short && !p.Lapsed
	if g != nil {
		want := opts.Max
		if takeShort && lim.concurrency() > 0 {
			// A short-job lane held since before the tenant's concurrency
			// limit: it hands out nothing more, and its holder lets it go.
			want = 0
		}
		if err := g.decide(tr, want, now); err != nil {
			return res, errGated(p.ItemSpace, err)
		}
		if g.allow == 0 {
			if err := read.discard(); err != nil {
				return res, err
			}
			g.commit(tr, nil)
			if takeShort && opts.Lane != nil {
				// Its hand-outs run under its lease: only its holder may
				// hand it back.
				kept := p
				res.Lane = &kept
				return res, nil
			}
			// Nothing may start: the lane waits, parked, until the tenant
			// may start again; other lanes may have work now.
			q.park(tr, &p, g)
			res.NextVest = now
			return res, nil
		}
		if g.allow < opts.Max {
			opts.Max, opts.capped, opts.gate = g.allow, true, g
		}
	}
	if read != nil && read.short != takeShort {
		// Read for the other kind of claim (a short-job lane taken over
		// after its lease lapsed is claimed with per-job leases).
		if err := read.discard(); err != nil {
			return res, err
		}
		read = nil
	}
	var err error
	if takeShort {
		err = q.takeShort(tr, opts, &p, now, &res, read)
	} else {
		err = q.claimLane(tr, opts, &p, now, &res, read)
	}
	if err == nil && res.Lane != nil {
		// The claim keeps the lane: write the lease acquire took.
		q.saveHold(tr, res.Lane)
	}
	if err == nil {
		g.commit(tr, res.Jobs)
	}
	return res, err
}

// zcand is a vested job a lane read met.
type zcand struct {
	key []byte
	jk  zjobKey
	v   zjobValue
	pf  kv.Future[[]byte] // Z (3, id), for a payload not inline
	cf  kv.Future[[]byte] // Z (4, id), for a checkpoint not inline
	// vlen is the stored value's size (zclaimJobBytes).
	vlen int
}

// readLane issues the reads a claim makes of lane l: as takeShort reads a
// fresh lane (short) or as claimLane does. acquire issues them beside the
// lane's state.
func (q *Queue) readLane(tr kv.Transaction, opts ClaimOptions, l laneRef, short bool, now time.Time) *laneRead {
	snap := tr.Snapshot()
	if short {
		return &laneRead{l: l, short: true, rr: snap.GetRange(shortRange(l, nil, now.UnixMilli()), kv.RangeOptions{Limit: shortLimit(opts) + 1})}
	}
	return &laneRead{
		l:    l,
		rr:   snap.GetRange(l.laneRange(), kv.RangeOptions{Limit: opts.Max + 1 + zclaimAllowance}),
		meta: snap.Get(l.z.metaKey()),
	}
}

// claimLane takes the vested jobs of the lane p holds with per-job leases,
// dead-letters the exhausted ones, quarantines what does not decode, and
// hands the lane back (or keeps it: opts.Keep and More). read is the lane
// read already in flight (readLane), or nil.
func (q *Queue) claimLane(tr kv.Transaction, opts ClaimOptions, p *LaneLease, now time.Time, res *Claimed, read *laneRead) error {
	l := p.lane
	nowMs := now.UnixMilli()
	snap := tr.Snapshot()
	limit := opts.Max + 1 + zclaimAllowance
	if read == nil || read.short || read.l.lane != l.lane || read.l.prio != l.prio || string(read.l.z.space.Bytes()) != string(l.z.space.Bytes()) {
		read = q.readLane(tr, opts, l, false, now)
	}
	rr, metaF := read.rr, read.meta
	kvs, err := rr.GetSliceWithError()
	if err != nil {
		return err
	}
	var (
		cands      []zcand
		bad        []corruptEntry
		runnable   int
		future     = int64(-1) // vesting time of the first future key
		leftVested bool        // a vested job was left for the next claim
	)
	for _, kvp := range kvs {
		jk, perr := l.z.parseJobKey(kvp.Key)
		if perr != nil {
			bad = append(bad, corruptEntry{key: kvp.Key, value: kvp.Value, err: perr})
			continue
		}
		if jk.VestMs > nowMs {
			future = jk.VestMs
			break
		}
		if runnable == opts.Max {
			leftVested = true
			break
		}
		var v zjobValue
		if derr := v.unmarshal(kvp.Value); derr != nil {
			bad = append(bad, corruptEntry{key: kvp.Key, value: kvp.Value, err: derr})
			continue
		}
		if !v.exhausted() {
			runnable++
		}
		c := zcand{key: kvp.Key, jk: jk, v: v, vlen: len(kvp.Value)}
		if v.Flags&flagBlob != 0 {
			c.pf = snap.Get(l.z.blobKey(jk.ID))
		}
		if v.hasCheckpoint() && v.Flags&flagCkptBlob != 0 {
			c.cf = snap.Get(l.z.ckptKey(jk.ID))
		}
		cands = append(cands, c)
	}
	// A full read that saw no future key and left nothing behind has not
	// seen the lane's end.
	if len(kvs) == limit && future < 0 && !leftVested {
		leftVested = true
	}
	b := claimBudget{max: min(opts.MaxBytes, zclaimTxBytes)}
	deadline := now.Add(opts.Lease)
	leaseMs := deadline.UnixMilli()
	var taken []zjobKey
	var last []byte // the last job key taken or dead-lettered
	for _, c := range cands {
		ok, err := q.takeZoneJob(tr, opts, l, now, deadline, c, &b, res)
		if err != nil {
			return err
		}
		if !ok {
			leftVested = true
			break
		}
		last = c.key
		if c.v.exhausted() {
			continue
		}
		taken = append(taken, c.jk)
	}
	for _, e := range bad {
		if !b.fits(2*len(e.key)+len(e.value)+quarantineOverhead, true) {
			leftVested = true
			break
		}
		if err := q.conflictOn(tr, e.key); err != nil {
			return err
		}
		q.quarantineRaw(tr, now, e.key, e.value, e.err)
	}
	if hooked := len(res.deadIDs) > 0 && q.hasDeadHook(opts.TaskType); hooked {
		// A dead-letter hook ran in this transaction and may have placed
		// jobs in this very lane (an enqueue of the same task type and
		// tenant). Its cover saw the lane as it was before this claim
		// (the lease is written at the end) and may have moved the
		// pointer, and this claim's read of the lane came before the job.
		// Read the lane's state and first key again, through the
		// transaction (its own writes show), so that the hand-back
		// neither strands the job nor leaves a second pointer.
		fut, err := q.rereadLane(tr, p, l, nowMs)
		if err != nil {
			return err
		}
		if fut >= 0 && (future < 0 || fut < future) {
			future = fut
		}
	}
	res.More = leftVested
	if opts.capped && res.More {
		// The tenant's limits, not the lane, stopped the claim: the lane
		// goes back (behind the others) rather than grow or split, which
		// would not let the tenant start more.
		opts.Keep = false
	}
	if len(res.Jobs) == 0 && !res.More {
		// The lane's pointer vested before its jobs (a lease renewed or a
		// job moved later): other lanes may have work, look again now.
		res.NextVest = now
	}
	if res.More && !opts.capped {
		n, err := q.growZone(tr, l, metaF, taken, nowMs)
		if err != nil {
			return err
		}
		if !b.full && zoneBacklogged(taken, nowMs) && !splitBefore(cands) && !q.opts.TaskTypes[opts.TaskType].ShortJobs {
			left, fut, err := q.splitLane(tr, opts, l, n, last, now, &b)
			if err != nil {
				return err
			}
			if !left {
				// The split took every vested job the lane had left: it
				// goes back to its next vesting time, and the chunk's new
				// lane has work now.
				res.More, future = false, fut
				res.NextVest = now
			}
		}
	}
	if opts.capped && res.More && opts.gate.blockedAfter(len(taken), now) {
		// The limits stopped the claim and the tenant may start nothing
		// more now: the lane waits, parked, rather than come back at once.
		q.park(tr, p, opts.gate)
		return nil
	}
	if opts.Keep && res.More {
		kept := *p
		res.Lane = &kept
		return nil
	}
	next := int64(-1)
	switch {
	case res.More:
		next = nowMs
	case future >= 0 && len(taken) > 0:
		next = min(future, leaseMs)
	case future >= 0:
		next = future
	case len(taken) > 0:
		next = leaseMs
	}
	var readBefore []byte
	if next >= 0 {
		readBefore = l.jobKey(next, ID{})
	}
	return q.releaseLane(tr, p, next, readBefore)
}

// takeZoneJob leases one vested job (or dead-letters it when its attempts
// are spent), within the budget; false when it did not fit.
func (q *Queue) takeZoneJob(tr kv.Transaction, opts ClaimOptions, l laneRef, now, deadline time.Time, c zcand, b *claimBudget, res *Claimed) (bool, error) {
	payload, ckpt := c.v.Payload, c.v.Checkpoint
	var err error
	if c.pf != nil {
		if payload, err = c.pf.Get(); err != nil {
			return false, err
		}
	}
	if c.cf != nil {
		if ckpt, err = c.cf.Get(); err != nil {
			return false, err
		}
	}
	id := c.jk.ID
	if c.v.exhausted() {
		if !b.fits(len(payload)+len(ckpt)+zclaimJobBytes(c.key, c.vlen, opts.Holder)+deadLetterOverhead, true) {
			return false, nil
		}
		if err := q.conflictOn(tr, c.key); err != nil {
			return false, err
		}
		reason := fmt.Sprintf("lease expired on the last of %d attempts (its holders vanished)", c.v.MaxAttempts)
		payload = clone(payload)
		if err := q.zoneDeadLetterTx(tr, now, l, c.key, c.jk, c.v, reason); err != nil {
			return false, err
		}
		if err := q.runDeadHook(tr, l.z.taskType, id, payload, reason); err != nil {
			return false, err
		}
		res.deadIDs = append(res.deadIDs, id)
		return true, nil
	}
	if !b.fits(len(payload)+len(ckpt)+zclaimJobBytes(c.key, c.vlen, opts.Holder), false) {
		return false, nil
	}
	if err := q.conflictOn(tr, c.key); err != nil {
		return false, err
	}
	// The value aliases the read's buffer: the lease gets its own copies.
	payload, ckpt = clone(payload), clone(ckpt)
	v := c.v
	if v.Flags&flagBlob == 0 {
		v.Payload = payload
	}
	if v.Flags&flagCkptBlob == 0 {
		v.Checkpoint = ckpt
	}
	v.Attempt++
	v.Token = newToken()
	v.Holder = opts.Holder
	v.LeasedAtMs = now.UnixMilli()
	vestMs := deadline.UnixMilli()
	tr.Clear(c.key)
	tr.Set(l.jobKey(vestMs, id), v.marshal())
	q.indexSet(tr, l, vestMs, id, v.Flags)
	created := v.CreatedAtMs
	if created == 0 {
		created = id.Time().UnixMilli()
	}
	res.Jobs = append(res.Jobs, Lease{
		ID: id, TaskType: l.z.taskType, Priority: l.prio, ItemSpace: l.z.itemSpace,
		Payload: payload, Checkpoint: ckpt, Attempt: int(v.Attempt), MaxAttempts: int(v.MaxAttempts),
		CreatedAt: time.UnixMilli(created), VestedAt: time.UnixMilli(c.jk.VestMs),
		Deadline: deadline.Truncate(time.Millisecond), Holder: opts.Holder, LastError: v.LastError,
		zl: &zoneLease{lane: l, vestMs: vestMs, v: v},
	})
	return true, nil
}

// clone copies b (nil stays nil).
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

const defaultLease = 30 * time.Second

func (q *Queue) checkLease(d time.Duration) error {
	if d < MinLease {
		return fmt.Errorf("%w: %v is under %v, unsafe against FDB's 5 s transaction limit", ErrInvalidLease, d, MinLease)
	}
	if d > q.opts.MaxLease {
		return fmt.Errorf("%w: %v is over the queue's MaxLease %v", ErrInvalidLease, d, q.opts.MaxLease)
	}
	return nil
}

// Bounds of one claim transaction, besides MaxBytes (which counts the
// payloads and checkpoints taken and the records rewritten).
const (
	// claimRewriteBytes caps the bytes a claim rewrites for the jobs it
	// dead-letters and the entries it quarantines, whatever MaxBytes says,
	// far under FDB's 10 MB; at least one is always handled.
	claimRewriteBytes = 1 << 20
	// claimRounds caps the round trips a claim spends reading records when
	// some turn out corrupt and their slots are refilled.
	claimRounds = 4
	// deadLetterOverhead bounds what a dead letter writes besides the
	// record: the dead-letter key, the counter, index clears, error text.
	deadLetterOverhead = 4 << 10
)

// releaseUnknown hands back the leases of a claim that ended without
// knowing whether it committed (its context ended while a commit was in
// flight, or its timeouts struck every recovery): nobody will run them, and
// left leased they would lapse with an attempt spent, so that a job with one
// attempt would be dead-lettered without ever running. A release spends no
// attempt and changes nothing where the claim did not commit (the token
// check fails). It runs on its own short deadline, since ctx may be over.
func (q *Queue) releaseUnknown(ctx context.Context, ls []Lease, timeout time.Duration) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	acks := make([]Ack, len(ls))
	for i, l := range ls {
		acks[i] = Ack{Lease: l, Kind: AckRelease}
	}
	// Lost leases are expected (the claim may not have committed); only a
	// failed transaction leaves leases to lapse.
	if res, err := q.Ack(rctx, acks...); err != nil && len(res) < len(acks) {
		q.opts.Logger.Warn("quick: could not release the leases of a claim whose outcome is unknown; they vest again when they lapse",
			"jobs", len(ls), "err", err)
	}
}

func setClaimOptions(tr kv.Transaction, opts ClaimOptions) error {
	o := tr.Options()
	if err := o.SetTimeout(opts.Timeout.Milliseconds()); err != nil {
		return err
	}
	if opts.BatchPriority {
		if err := o.SetPriorityBatch(); err != nil {
			return err
		}
	}
	if opts.Tag != "" {
		if err := o.SetTag(opts.Tag); err != nil {
			return err
		}
	}
	return nil
}

// deadAt returns the jobs among ids that were dead-lettered at now: by an
// earlier attempt of this claim, since now is fixed per call.
func (q *Queue) deadAt(tr kv.Transaction, ids []ID, now time.Time) ([]ID, error) {
	fs := make([]kv.Future[[]byte], len(ids))
	for i, id := range ids {
		fs[i] = tr.Snapshot().Get(q.k.jobKey(id))
	}
	var out []ID
	for i, f := range fs {
		v, err := f.Get()
		if err != nil {
			return nil, err
		}
		var rec record
		if v != nil && rec.unmarshal(v) == nil && rec.State == stateDead && rec.DeadAtMs == now.UnixMilli() {
			out = append(out, ids[i])
		}
	}
	return out, nil
}

// claimBudget tracks what a claim has spent: payload and checkpoint bytes
// taken plus record bytes rewritten against MaxBytes, and rewritten bytes
// against claimRewriteBytes. full is set once something did not fit.
type claimBudget struct {
	max, spent, rewritten int
	handled               bool // a job taken or an entry rewritten
	full                  bool
}

// fits reports whether cost more bytes fit (rewrite: bytes written for a
// dead letter or quarantine), and spends them if so. The first job or
// rewrite always fits, so a claim always makes progress.
func (b *claimBudget) fits(cost int, rewrite bool) bool {
	if b.handled && (b.spent+cost > b.max || (rewrite && b.rewritten+cost > claimRewriteBytes)) {
		b.full = true
		return false
	}
	b.handled = true
	b.spent += cost
	if rewrite {
		b.rewritten += cost
	}
	return true
}

func newToken() uint64 {
	for {
		if t := rand.Uint64(); t != 0 {
			return t
		}
	}
}

// corruptEntry is an entry of a lane that does not decode: its key does
// not parse, or its value does not decode. Claims quarantine it.
type corruptEntry struct {
	key, value []byte
	err        error
}

// conflictOn makes the claim conflict with any other transaction that
// changes key meanwhile: two claims of one job cannot both commit.
func (q *Queue) conflictOn(tr kv.Transaction, key []byte) error {
	if mutant.On("quick.conflict-range") {
		return nil
	}
	return tr.AddReadConflictKey(key)
}

// rereadLane reads lane l's state and first key again in tr, after a
// dead-letter hook wrote in it (claimLane): a pointer a hook's enqueue moved
// becomes where p's unsaved lease moves from, and the first key's vesting
// time (now at the earliest) is returned, -1 for an empty lane.
//
// Keys: snapshot reads of Z (1, prio, lane) and of the lane's first key;
// both see the transaction's own writes.
func (q *Queue) rereadLane(tr kv.Transaction, p *LaneLease, l laneRef, nowMs int64) (int64, error) {
	sf := tr.Snapshot().Get(l.stateKey())
	_, vestMs, err := q.laneFirst(tr, l, nowMs)
	if err != nil {
		return 0, err
	}
	sv, err := sf.Get()
	if err != nil {
		return 0, err
	}
	var st laneState
	if p.unsaved && sv != nil && st.unmarshal(sv) == nil && !st.leased() {
		p.fromMs = st.PtrMs
	}
	if vestMs < 0 {
		return -1, nil
	}
	return max(vestMs, nowMs), nil
}
