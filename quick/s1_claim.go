package quick

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// ClaimOptions shape one claim.
type ClaimOptions struct {
	TaskType string
	// Holder names the worker taking the leases; required.
	Holder string
	// Lanes to scan; nil scans every lane.
	Lanes []int
	// Max is the most jobs to claim; default 1.
	Max int
	// Lease is how long the claimed jobs are held before they vest again;
	// at least MinLease, at most the queue's MaxLease. Default 30 s.
	Lease time.Duration
	// ScanLimit bounds the keys read from each lane and priority; default
	// twice Max, at least 4.
	ScanLimit int
	// MaxBytes caps the payload and checkpoint bytes one claim takes;
	// default 4 MB. At least one job is always taken.
	MaxBytes int
	// Timeout bounds the claim transaction, well under FDB's 5 s; default 2 s.
	Timeout time.Duration
	// BatchPriority runs the claim at FDB's batch priority, so a loaded
	// cluster sheds queue work before the application's own transactions.
	BatchPriority bool
	// Tag is an FDB throttling tag for the claim (at most MaxTagLen bytes).
	Tag string
}

// Claimed is the outcome of a claim.
type Claimed struct {
	Jobs []Lease
	// NextVest is the earliest vesting time after now seen in the scanned
	// lanes: a worker with nothing to do can sleep until then, since a
	// vesting job or an expiring lease writes nothing that could wake it.
	// Zero when none was seen.
	NextVest time.Time
	// More is set when a scanned lane held more vested jobs than were taken.
	More bool
	// DeadLettered counts jobs moved to the dead letters instead of being
	// claimed: their attempts had all been spent by holders that vanished,
	// or their record or schedule value did not decode (quarantined).
	DeadLettered int

	deadIDs []ID
}

const defaultLease = 30 * time.Second

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
	if o.ScanLimit <= 0 {
		o.ScanLimit = max(2*o.Max, 4)
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
	if o.Lanes == nil {
		o.Lanes = make([]int, q.lanes)
		for i := range o.Lanes {
			o.Lanes[i] = i
		}
	}
	for _, l := range o.Lanes {
		if l < 0 || l >= q.lanes {
			return o, fmt.Errorf("%w: lane %d outside [0,%d)", ErrInvalidOption, l, q.lanes)
		}
	}
	return o, nil
}

func (q *Queue) checkLease(d time.Duration) error {
	if d < MinLease {
		return fmt.Errorf("%w: %v is under %v, unsafe against FDB's 5 s transaction limit", ErrInvalidLease, d, MinLease)
	}
	if d > q.opts.MaxLease {
		return fmt.Errorf("%w: %v is over the queue's MaxLease %v", ErrInvalidLease, d, q.opts.MaxLease)
	}
	return nil
}

// candidate is a vested schedule key seen by a claim's scan.
type candidate struct {
	key []byte
	sk  schedKey
	sv  schedValue
}

func (c candidate) exhausted() bool {
	return c.sv.MaxAttempts > 0 && c.sv.Attempt >= c.sv.MaxAttempts
}

// corruptEntry is a vested entry of a lane that does not decode: its key
// does not parse (parsed false), or its schedule value does not decode.
type corruptEntry struct {
	key, value []byte
	sk         schedKey
	parsed     bool
	err        error
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

// Claim leases up to opts.Max vested jobs of a task type from the given
// lanes. It scans every lane and priority with concurrent snapshot range
// reads in one transaction, takes High before Normal before Low and older
// before newer, and moves each taken job's schedule key to now + Lease with
// a fresh lease token. Only the taken keys get read-conflict ranges, so
// claims of different jobs never conflict; two claims of the same job
// conflict and one fails, so two workers never both hold a live lease.
//
// Keys: a snapshot range read of S(1,"s",type,lane) for each lane (and of
// S(1,"s",type,lane,prio) for the lower priorities of a lane whose read
// ended among future keys); snapshot reads of S(1,"j",id) and, for checkpointed jobs,
// S(1,"c",id); per job taken: a read-conflict key, a clear and a set of
// S(1,"s",...). A job whose attempts were all spent is dead-lettered instead
// (see Fail), and the task type's DeadLetterHook, if set, runs in the claim's
// transaction (deadhook.go).
func (q *Queue) Claim(ctx context.Context, opts ClaimOptions) (Claimed, error) {
	opts, err := q.claimDefaults(opts)
	if err != nil {
		return Claimed{}, err
	}
	var res Claimed
	now := q.Now()
	err = q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		if err := setClaimOptions(tr, opts); err != nil {
			return err
		}
		// The previous attempt may have committed: the jobs it
		// dead-lettered are then gone from the scan, and its leases are
		// this claim's (claiming again would strand them until they lapse).
		var carried []ID
		if maybeCommitted {
			var err error
			if carried, err = q.deadAt(tr, res.deadIDs, now); err != nil {
				return err
			}
			if len(res.Jobs) > 0 {
				mine, err := q.stillHeld(tr, res.Jobs)
				if err != nil {
					return err
				}
				if len(mine) > 0 {
					res.Jobs, res.deadIDs, res.DeadLettered = mine, carried, len(carried)
					return nil
				}
			}
		}
		r, err := q.claimTx(tr, opts, now)
		if err != nil {
			return err
		}
		r.deadIDs = append(r.deadIDs, carried...)
		r.DeadLettered = len(r.deadIDs)
		res = r
		return nil
	})
	if err != nil {
		if kv.IsMaybeCommitted(err) && len(res.Jobs) > 0 {
			q.releaseUnknown(ctx, res.Jobs, opts.Timeout)
		}
		return Claimed{}, fmt.Errorf("quick: claim %s: %w", opts.TaskType, err)
	}
	return res, nil
}

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

// scanVested adds the vested keys of a lane scan to cands, and those that do
// not decode to bad, and lowers next to the earliest future vesting time
// seen. It returns the priority of the last key and whether that key is in
// the future.
func (q *Queue) scanVested(kvs []kv.KeyValue, nowMs int64, cands *[]candidate, bad *[]corruptEntry, next *int64) (Priority, bool) {
	last, lastFuture := Priority(0), false
	for _, p := range kvs {
		sk, err := q.k.parseSched(p.Key)
		if err != nil {
			*bad = append(*bad, corruptEntry{key: p.Key, value: p.Value, err: err})
			continue
		}
		last, lastFuture = sk.Priority, sk.VestMs > nowMs
		if lastFuture {
			if *next == 0 || sk.VestMs < *next {
				*next = sk.VestMs
			}
			continue
		}
		var sv schedValue
		if err := sv.unmarshal(p.Value); err != nil {
			*bad = append(*bad, corruptEntry{key: p.Key, value: p.Value, sk: sk, parsed: true, err: err})
			continue
		}
		*cands = append(*cands, candidate{key: p.Key, sk: sk, sv: sv})
	}
	return last, lastFuture
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

// stillHeld returns the leases whose keys hold their tokens.
func (q *Queue) stillHeld(tr kv.Transaction, ls []Lease) ([]Lease, error) {
	fs := make([]kv.Future[[]byte], len(ls))
	for i, l := range ls {
		fs[i] = tr.Get(l.key)
	}
	var out []Lease
	for i, f := range fs {
		_, err := q.held(f, ls[i])
		switch {
		case err == nil:
			out = append(out, ls[i])
		case !IsLeaseLost(err):
			return nil, err
		}
	}
	return out, nil
}

func (q *Queue) claimTx(tr kv.Transaction, opts ClaimOptions, now time.Time) (Claimed, error) {
	nowMs := now.UnixMilli()
	snap := tr.Snapshot()
	// One range read per lane covers its three priorities, which are
	// consecutive ranges of the lane, High first. A read that ends among
	// future keys of one priority (leased or delayed jobs) has not shown the
	// lower priorities; they get a read each in a second round trip. An idle
	// lane so costs one range read, not three.
	var (
		res   Claimed
		cands []candidate
		bad   []corruptEntry
		next  int64
	)
	limit := kv.RangeOptions{Limit: opts.ScanLimit}
	first := make([]kv.RangeResult, len(opts.Lanes))
	for i, lane := range opts.Lanes {
		first[i] = snap.GetRange(q.k.laneAll(opts.TaskType, lane), limit)
	}
	var follow []kv.RangeResult
	for i, rr := range first {
		kvs, err := rr.GetSliceWithError()
		if err != nil {
			return Claimed{}, err
		}
		nbad := len(bad)
		last, lastFuture := q.scanVested(kvs, nowMs, &cands, &bad, &next)
		if len(kvs) < opts.ScanLimit {
			continue
		}
		// A full read with corrupt entries in it showed fewer jobs than the
		// budget: they are quarantined below, and the caller comes back at
		// once for what they hid.
		if !lastFuture || len(bad) > nbad {
			res.More = true
		}
		if !lastFuture {
			continue
		}
		for _, p := range priorities {
			if p > last {
				follow = append(follow, snap.GetRange(q.k.laneRange(opts.TaskType, opts.Lanes[i], p), limit))
			}
		}
	}
	for _, rr := range follow {
		kvs, err := rr.GetSliceWithError()
		if err != nil {
			return Claimed{}, err
		}
		nbad := len(bad)
		if _, lastFuture := q.scanVested(kvs, nowMs, &cands, &bad, &next); len(kvs) == opts.ScanLimit && (!lastFuture || len(bad) > nbad) {
			res.More = true
		}
	}
	if next != 0 {
		res.NextVest = time.UnixMilli(next)
	}
	// High before Normal before Low; within a level, the longest vested
	// first, so no job waits behind younger ones.
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i].sk, cands[j].sk
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return a.VestMs < b.VestMs
	})
	b := claimBudget{max: opts.MaxBytes}
	// The records of the corrupt schedule values are read with the first
	// round's, in the same round trip.
	badRecs := make([]kv.Future[[]byte], len(bad))
	for i, e := range bad {
		if e.parsed {
			badRecs[i] = snap.Get(q.k.jobKey(e.sk.ID))
		}
	}
	// Take candidates in order until Max runnable jobs are taken; the
	// exhausted ones met on the way are dead-lettered rather than run. A
	// candidate whose record is missing or corrupt costs no slot: the next
	// round reads as many more.
	pos := 0
	for round := 0; pos < len(cands) && len(res.Jobs) < opts.Max && !b.full; round++ {
		if round == claimRounds {
			res.More = true
			break
		}
		end, runnable := pos, 0
		for end < len(cands) && runnable < opts.Max-len(res.Jobs) {
			if !cands[end].exhausted() {
				runnable++
			}
			end++
		}
		if err := q.claimRound(tr, snap, opts, now, cands[pos:end], &res, &b); err != nil {
			return Claimed{}, err
		}
		pos = end
	}
	if pos < len(cands) || b.full {
		res.More = true
	}
	for i, e := range bad {
		if b.full {
			res.More = true
			break
		}
		if err := q.quarantineEntry(tr, now, e, badRecs[i], &b, &res); err != nil {
			return Claimed{}, err
		}
	}
	return res, nil
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

// claimRound reads the records of a slice of candidates in one round trip
// and takes, dead-letters or quarantines each, within the budget.
func (q *Queue) claimRound(tr kv.Transaction, snap kv.ReadTransaction, opts ClaimOptions, now time.Time, cands []candidate, res *Claimed, b *claimBudget) error {
	recs := make([]kv.Future[[]byte], len(cands))
	ckpts := make([]kv.Future[[]byte], len(cands))
	for i, c := range cands {
		recs[i] = snap.Get(q.k.jobKey(c.sk.ID))
		if c.sv.hasCheckpoint() {
			ckpts[i] = snap.Get(q.k.ckptKey(c.sk.ID))
		}
	}
	for i, c := range cands {
		rv, err := recs[i].Get()
		if err != nil {
			return err
		}
		var ck []byte
		if ckpts[i] != nil {
			if ck, err = ckpts[i].Get(); err != nil {
				return err
			}
		}
		if rv == nil {
			// A schedule key without its record cannot be run; clear it so
			// scans stop paying for it.
			q.opts.Logger.Warn("quick: clearing a schedule key whose job record is missing", "id", c.sk.ID)
			if err := q.conflictOn(tr, c.key); err != nil {
				return err
			}
			tr.Clear(c.key)
			continue
		}
		var rec record
		if derr := rec.unmarshal(rv); derr != nil {
			if !b.fits(len(rv)+len(c.key)+quarantineOverhead, true) {
				return nil
			}
			if err := q.conflictOn(tr, c.key); err != nil {
				return err
			}
			q.quarantineRecord(tr, now, c.key, c.sk, &c.sv, rv, derr)
			res.deadIDs = append(res.deadIDs, c.sk.ID)
			continue
		}
		if c.exhausted() {
			// Dead-lettering rewrites the record: its bytes count.
			if !b.fits(len(rv)+len(c.key)+deadLetterOverhead, true) {
				return nil
			}
			if err := q.conflictOn(tr, c.key); err != nil {
				return err
			}
			reason := fmt.Sprintf("lease expired on the last of %d attempts (its holders vanished)", c.sv.MaxAttempts)
			q.deadLetterTx(tr, now, c.key, c.sk.ID, c.sv, &rec, reason)
			if err := q.runDeadHook(tr, opts.TaskType, c.sk.ID, rec.Payload, reason); err != nil {
				return err
			}
			res.deadIDs = append(res.deadIDs, c.sk.ID)
			continue
		}
		if !b.fits(len(rec.Payload)+len(ck), false) {
			return nil
		}
		if err := q.conflictOn(tr, c.key); err != nil {
			return err
		}
		sv := c.sv
		sv.Attempt++
		sv.Token = newToken()
		sv.Holder = opts.Holder
		sv.LeasedAtMs = now.UnixMilli()
		deadline := now.Add(opts.Lease)
		key, lane, vestMs := q.k.place(opts.TaskType, c.sk.Priority, deadline, c.sk.ID, q.lanes)
		tr.Clear(c.key)
		tr.Set(key, sv.marshal())
		tr.Set(q.k.leaseKey(c.sk.ID), encodeLeaseIndex(vestMs))
		res.Jobs = append(res.Jobs, Lease{
			ID: c.sk.ID, TaskType: opts.TaskType, Priority: c.sk.Priority, ItemSpace: rec.ItemSpace,
			Payload: rec.Payload, Checkpoint: ck, Attempt: int(sv.Attempt), MaxAttempts: int(sv.MaxAttempts),
			CreatedAt: time.UnixMilli(rec.CreatedAtMs), VestedAt: time.UnixMilli(c.sk.VestMs),
			Deadline: deadline.Truncate(time.Millisecond), Holder: opts.Holder, LastError: rec.LastError,
			key: key, lane: lane, sv: sv,
		})
	}
	return nil
}

// conflictOn makes the claim conflict with any other transaction that
// moves or removes the key it is about to move (its scan read it through a
// snapshot, which adds no conflict range): two claims of one job conflict,
// and one fails.
func (q *Queue) conflictOn(tr kv.Transaction, key []byte) error {
	if mutant.On("quick.conflict-range") {
		return nil
	}
	return tr.AddReadConflictKey(key)
}

// quarantineEntry moves a corrupt schedule entry out of the schedule,
// within the budget.
func (q *Queue) quarantineEntry(tr kv.Transaction, now time.Time, e corruptEntry, recF kv.Future[[]byte], b *claimBudget, res *Claimed) error {
	if !e.parsed {
		if !b.fits(2*len(e.key)+len(e.value)+quarantineOverhead, true) {
			return nil
		}
		if err := q.conflictOn(tr, e.key); err != nil {
			return err
		}
		q.quarantineRaw(tr, now, e.key, e.value, e.err)
		return nil
	}
	rv, err := recF.Get()
	if err != nil {
		return err
	}
	if !b.fits(len(rv)+len(e.key)+quarantineOverhead, true) {
		return nil
	}
	if err := q.conflictOn(tr, e.key); err != nil {
		return err
	}
	var rec record
	switch derr := rec.unmarshal(rv); {
	case rv == nil:
		q.opts.Logger.Warn("quick: clearing a corrupt schedule key whose job record is missing", "id", e.sk.ID, "err", e.err)
		tr.Clear(e.key)
	case derr != nil:
		q.quarantineRecord(tr, now, e.key, e.sk, nil, rv, fmt.Errorf("%w; and its schedule value: %w", derr, e.err))
		res.deadIDs = append(res.deadIDs, e.sk.ID)
	default:
		q.opts.Logger.Warn("quick: dead-lettering a job whose schedule value does not decode", "id", e.sk.ID, "err", e.err)
		sv := schedValue{Attempt: rec.Attempts, MaxAttempts: rec.MaxAttempts, UniqueKey: rec.UniqueKey}
		q.deadLetterTx(tr, now, e.key, e.sk.ID, sv, &rec, fmt.Sprintf("quarantined: its schedule value does not decode (%v)", e.err))
		res.deadIDs = append(res.deadIDs, e.sk.ID)
	}
	return nil
}

func newToken() uint64 {
	for {
		if t := rand.Uint64(); t != 0 {
			return t
		}
	}
}
