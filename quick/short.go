package quick

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Short-job mode (TaskTypeOptions.ShortJobs; docs/design.md "Cost per
// job"). The lane lease is the jobs' lease: a claim hands out a lane's
// vested jobs without writing anything, and an ack that completes one
// clears its key after checking that the lane is still held. Per job that
// is the floor of a durable queue: the enqueue's set and the ack's clear;
// the lane's lease and hand-back (a few keys) are shared by every job the
// holder takes from the lane.
//
// Nothing is lost when a holder dies: its lane lease lapses at its
// deadline, the lane's pointer (at that deadline) vests, and another worker
// takes the lane over (Lapsed) and runs what was not cleared with per-job
// leases, so those attempts are counted. A job that runs longer than the
// lane lease is moved to a lease of its own (Extend, HandBack) before the
// lane lease lapses, so it never runs unprotected.
//
// The dead holder's runs are counted too. A hand-out writes nothing per
// job, so the job keys cannot tell which jobs it handed out; the lane's
// hand-out mark Z (5, prio, lane) does: each claim that hands jobs out sets
// it to the holder's token and the last job handed out (one set of 32
// bytes per claim, not per job). A takeover of a lapsed short lease reads
// the mark (serializably: a late claim of the lapsed holder and the
// takeover conflict, so one of them sees the other) and, when the mark is that
// lease's, adds the lapsed run to every job key up to the mark that carries
// no per-job token (countLapsedShort): those are the jobs handed out and
// not cleared. Without it a job that killed its holders in short-job mode
// ran twice per counted attempt, and a takeover showed attempt 1 for a
// second run.

// shortLimit is how many jobs a short-job claim hands out at most.
func shortLimit(opts ClaimOptions) int { return max(opts.Max, 1) }

// shortRange is the keys a short-job claim reads of lane l: those vesting
// by nowMs, after cursor (the last key handed out under the lease, nil for
// a fresh lane).
func shortRange(l laneRef, cursor []byte, nowMs int64) kv.KeyRange {
	r := l.laneRange()
	if cursor != nil {
		r.Begin = kv.KeyAfter(cursor)
	}
	// Every key vesting by now sorts before (0, prio, lane, now+1).
	r.End = l.z.space.Pack(tuple.Tuple{int64(zJobs), int64(l.prio), int64(l.lane), nowMs + 1})
	return r
}

// takeShort hands out up to opts.Max vested jobs of a lane held in
// short-job mode (p.Short, not p.Lapsed) without moving their keys: the
// lane lease is their lease. Claim calls it in its transaction after
// acquiring or checking the lane, instead of taking per-job leases.
//
// It reads the lane after p's cursor (from the lane's start when there is
// none) up to now, and advances the cursor past what it handed out, so the
// holder's next claim continues there. Each lease's Deadline is the lane
// lease's; its Attempt is the stored attempt plus one (not written: the
// lane's hand-out mark lets a takeover count it, countLapsedShort). A job
// whose attempts were all spent by per-job holders that vanished is
// dead-lettered instead, and an entry that does not decode is quarantined
// (the only writes). res.Lane is set to p with its cursor advanced (p
// too is advanced): the lane stays held while its jobs run, until HandBack.
//
// Keys: a snapshot range read of Z (0, prio, lane) from the cursor to now
// (limit Max+1); snapshot reads of Z (3, id) and Z (4, id) for jobs with
// blobs; a set of the hand-out mark Z (5, prio, lane) when it hands a job
// out; otherwise writes only for dead letters and quarantines (each with a
// read-conflict key on its job key).
func (q *Queue) takeShort(tr kv.Transaction, opts ClaimOptions, p *LaneLease, now time.Time, res *Claimed, read *laneRead) error {
	if !p.Short || p.Lapsed {
		// A lapsed lane's jobs may have killed their holder: they run with
		// per-job leases, which count attempts.
		return fmt.Errorf("%w: short-job hand-out from lane %s leased with Short %v, Lapsed %v", ErrInvalidOption, p.lane, p.Short, p.Lapsed)
	}
	maxJobs, maxBytes := shortLimit(opts), opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 4 << 20
	}
	nowMs := now.UnixMilli()
	l := p.lane
	r := shortRange(l, p.cursor, nowMs)
	if string(r.Begin) >= string(r.End) {
		out := *p
		res.Lane = &out
		return nil
	}
	snap := tr.Snapshot()
	var rr kv.RangeResult
	if read != nil && read.short && p.cursor == nil && read.l.lane == l.lane && read.l.prio == l.prio && string(read.l.z.space.Bytes()) == string(l.z.space.Bytes()) {
		rr = read.rr // acquire read it beside the lane state
	} else {
		rr = snap.GetRange(r, kv.RangeOptions{Limit: maxJobs + 1})
	}
	kvs, err := rr.GetSliceWithError()
	if err != nil {
		return err
	}
	if len(kvs) > maxJobs {
		kvs, res.More = kvs[:maxJobs], true
	}
	type cand struct {
		key      []byte
		jk       zjobKey
		v        zjobValue
		blob, ck kv.Future[[]byte]
	}
	cands := make([]cand, 0, len(kvs))
	var cursor []byte
	b := claimBudget{max: maxBytes}
	for _, kvp := range kvs {
		jk, perr := l.z.parseJobKey(kvp.Key)
		var v zjobValue
		if perr == nil {
			perr = v.unmarshal(kvp.Value)
		}
		if perr != nil {
			if !b.fits(2*len(kvp.Key)+len(kvp.Value)+quarantineOverhead, true) {
				break
			}
			// A corrupt entry never blocks the lane: its bytes are kept
			// for an operator.
			if err := q.conflictOn(tr, kvp.Key); err != nil {
				return err
			}
			q.quarantineRaw(tr, now, kvp.Key, kvp.Value, perr)
			cursor = kvp.Key
			continue
		}
		if v.exhausted() {
			// Its last attempt ran under a per-job lease whose holder
			// vanished (short runs do not count until a takeover).
			if !b.fits(len(kvp.Value)+len(kvp.Key)+deadLetterOverhead, true) {
				break
			}
			if err := q.conflictOn(tr, kvp.Key); err != nil {
				return err
			}
			reason := fmt.Sprintf("lease expired on the last of %d attempts (its holders vanished)", v.MaxAttempts)
			if err := q.zoneDeadLetterTx(tr, now, l, kvp.Key, jk, v, reason); err != nil {
				return err
			}
			if err := q.runDeadHook(tr, l.z.taskType, jk.ID, v.Payload, reason); err != nil {
				return err
			}
			res.deadIDs = append(res.deadIDs, jk.ID)
			res.DeadLettered++
			cursor = kvp.Key
			continue
		}
		c := cand{key: kvp.Key, jk: jk, v: v}
		if v.Flags&flagBlob != 0 {
			c.blob = snap.Get(l.z.blobKey(jk.ID))
		}
		if v.hasCheckpoint() && v.Flags&flagCkptBlob != 0 {
			c.ck = snap.Get(l.z.ckptKey(jk.ID))
		}
		cands = append(cands, c)
	}
	ptr := *p
	var last zjobKey // the last job handed out
	for _, c := range cands {
		payload, ck := c.v.Payload, c.v.Checkpoint
		if c.blob != nil {
			if payload, err = c.blob.Get(); err != nil {
				return err
			}
		}
		if c.ck != nil {
			if ck, err = c.ck.Get(); err != nil {
				return err
			}
		}
		if !c.v.hasCheckpoint() {
			ck = nil
		}
		if !b.fits(len(payload)+len(ck), false) {
			break
		}
		if c.v.Token != 0 {
			// A vested key that still carries a token is a per-job lease
			// that lapsed (promoted by a hand-back, or taken with a
			// Lapsed lane, then its holder vanished or froze). A short
			// hand-out writes nothing, so that holder's token would stay
			// good and its late ack would commit over this run: clear the
			// token, in place (a read-conflict key on it, so an ack racing
			// this claim conflicts).
			if err := q.conflictOn(tr, c.key); err != nil {
				return err
			}
			c.v.Token, c.v.Holder, c.v.LeasedAtMs = 0, "", 0
			tr.Set(c.key, c.v.marshal())
		}
		created := c.v.CreatedAtMs
		if created == 0 {
			created = c.jk.ID.Time().UnixMilli()
		}
		res.Jobs = append(res.Jobs, Lease{
			ID: c.jk.ID, TaskType: l.z.taskType, Priority: c.jk.Priority, ItemSpace: l.z.itemSpace,
			Payload: payload, Checkpoint: ck, Attempt: int(c.v.Attempt + 1), MaxAttempts: int(c.v.MaxAttempts),
			CreatedAt: time.UnixMilli(created), VestedAt: time.UnixMilli(c.jk.VestMs),
			Deadline: p.Deadline, Holder: p.Holder, LastError: c.v.LastError,
			zl: &zoneLease{lane: l, vestMs: c.jk.VestMs, v: c.v, ptr: &ptr},
		})
		cursor = c.key
		last = c.jk
	}
	if b.full {
		res.More = true
	}
	if cursor != nil {
		p.cursor = append([]byte(nil), cursor...)
	}
	if len(res.Jobs) > 0 {
		// The hand-out mark: a takeover, should this lease lapse, counts
		// the runs of the jobs up to it (countLapsedShort).
		tr.Set(l.handoutKey(), handoutMark(p.token, last.VestMs, last.ID))
	}
	out := *p
	res.Lane = &out
	return nil
}

// handoutMark is the value of a lane's hand-out mark: the holder's token
// and the vesting time and ID of the last job it handed out (its key
// without the zone's prefix), 8 + 8 + 16 bytes.
func handoutMark(token uint64, vestMs int64, id ID) []byte {
	b := make([]byte, 0, 32)
	b = binary.BigEndian.AppendUint64(b, token)
	b = binary.BigEndian.AppendUint64(b, uint64(vestMs))
	return append(b, id[:]...)
}

// parseHandoutMark reads a hand-out mark; ok is false when it does not
// decode (it is then ignored: a run may go uncounted, nothing is lost).
func parseHandoutMark(v []byte) (token uint64, vestMs int64, id ID, ok bool) {
	if len(v) != 32 {
		return 0, 0, ID{}, false
	}
	copy(id[:], v[16:])
	return binary.BigEndian.Uint64(v[:8]), int64(binary.BigEndian.Uint64(v[8:16])), id, true
}

// lapsedCountLimit bounds the job keys a takeover rewrites to count a
// lapsed holder's runs: the jobs it had handed out and not cleared, about
// its handler slots. Beyond it the rest run again uncounted, as before the
// mark (logged).
const lapsedCountLimit = 1000

// countLapsedShort counts the runs of the jobs a lapsed short-job holder
// handed out and did not clear, in the transaction of the claim that takes
// its lane over (p.Lapsed, p.lapsedShort its token): every job key of the
// lane up to the holder's hand-out mark that carries no per-job token gets
// its attempt added, in place. The claim that follows (claimLane, a
// snapshot read that sees these writes) then takes them with per-job leases
// at the attempt after, or dead-letters those whose last attempt the dead
// holder ran. A key there with a token is a per-job lease, counted when it
// was taken. The mark is cleared: it is spent.
//
// Over-counting is possible only where a key was placed behind the
// holder's cursor without being handed out and the holder then died. No
// placement does: an enqueue reads the mark and places its job after it
// (enqueue.go, readHandoutMarks), and so do a run-now, a requeue and a
// fail, snooze or release that moves a key, the holder's own release of a
// short job in place included (vestAfterHandout).
//
// Keys: reads Z (5, prio, lane) (serializable); when it is the lapsed
// lease's, a snapshot range read of the lane up to the mark (at most
// lapsedCountLimit keys) and, per job counted, a read-conflict key and a
// set of its key; clears Z (5, prio, lane).
func (q *Queue) countLapsedShort(tr kv.Transaction, p *LaneLease) error {
	l := p.lane
	v, err := tr.Get(l.handoutKey()).Get()
	if err != nil || v == nil {
		return err
	}
	tr.Clear(l.handoutKey())
	token, vestMs, id, ok := parseHandoutMark(v)
	if !ok || token != p.lapsedShort {
		return nil
	}
	r := l.laneRange()
	r.End = kv.KeyAfter(l.jobKey(vestMs, id))
	kvs, err := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: lapsedCountLimit}).GetSliceWithError()
	if err != nil {
		return err
	}
	if len(kvs) == lapsedCountLimit {
		q.opts.Logger.Warn("quick: a lapsed short-job lane has more jobs handed out than a takeover counts; the rest run again uncounted",
			"lane", l.String(), "counted", lapsedCountLimit)
	}
	for _, kvp := range kvs {
		var jv zjobValue
		if _, perr := l.z.parseJobKey(kvp.Key); perr != nil || jv.unmarshal(kvp.Value) != nil {
			continue // the claim quarantines it
		}
		if jv.Token != 0 && !mutant.On("quick.count-tokened") {
			continue
		}
		if err := q.conflictOn(tr, kvp.Key); err != nil {
			return err
		}
		jv.Attempt++
		tr.Set(kvp.Key, jv.marshal())
	}
	return nil
}

// ExtendLane renews a held lane lease until now+d (at least a second,
// at most MaxLease): the lane's pointer and state move there, its token
// stays, so the short leases handed out under it stay valid (their
// Deadline fields keep the hand-out's deadline: their lease is the lane's,
// as renewed here). A lease already lost returns an error wrapping
// ErrLaneLost and changes nothing.
//
// Keys: reads Z (1, prio, lane) (serializable); writes it, clears the old
// pointer and sets the new one.
func (c *Consumer) ExtendLane(ctx context.Context, p LaneLease, d time.Duration) (LaneLease, error) {
	q := c.q
	if d < time.Second || d > q.opts.MaxLease {
		return p, fmt.Errorf("quick: extend lane lease: %w: %v is outside [1s, MaxLease %v]", ErrInvalidLease, d, q.opts.MaxLease)
	}
	deadline := q.Now().Add(d).Truncate(time.Millisecond)
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		s, err := q.checkHold(tr, &p)
		if err != nil {
			return err
		}
		// The pointer is where the lane state says (an earlier attempt of
		// this call may have moved it already).
		old := s.PtrMs
		s.PtrMs = deadline.UnixMilli()
		if old != s.PtrMs {
			q.movePointer(tr, p.lane, old, s)
		}
		return nil
	})
	if err != nil {
		return p, fmt.Errorf("quick: extend lane lease %s: %w", p.lane, err)
	}
	p.Deadline = deadline
	return p, nil
}

// HandBack hands a lane held in short-job mode back, first moving the jobs
// still running (running, handed out under p) to leases of their own until
// now+lease, in the same transaction; it returns their new leases.
//
// The result has one lease per running lease, in order: the new per-job
// lease of each job promoted; a per-job lease passed in comes back as it is. A running job whose lease was lost (its key
// moved or was cleared) comes back unchanged, and the error returned joins
// their *LeaseLostError (errors.Is(err, ErrLeaseLost)) next to the complete
// result. When the lane itself was lost (another worker took it over) it
// returns an error wrapping ErrLaneLost. On any error the result holds
// the leases as the committed transactions left them: unchanged when
// nothing committed.
//
// The lane's pointer moves to when the lane next has work, from its first
// key after the promotions: now when vested jobs remain (jobs never handed
// out, or released), the earliest deadline or vesting time otherwise, or it
// is removed with the lane state when the lane holds no key. More than 500
// running jobs (or about 1 MB of their values) are promoted in
// transactions of 500 (or 1 MB) while the lane stays held; the last one
// hands it back.
//
// Call it once the acks of the jobs that ended have returned: it changes
// the lane state, so an ack of a short lease still in flight conflicts,
// retries and finds its lane handed back (a lost lease, and its job runs
// again).
//
// Keys: per transaction reads Z (1, prio, lane) (serializable) and each
// running job's key (serializable); clears and sets each job key; the last
// also reads the lane's first key (snapshot, after the promotions), adds a
// read-conflict range over the lane up to it, and writes the lane state and
// pointer (releaseLane).
func (c *Consumer) HandBack(ctx context.Context, p LaneLease, running []Lease, lease time.Duration) ([]Lease, error) {
	q := c.q
	if err := q.checkLease(lease); err != nil {
		return nil, fmt.Errorf("quick: hand back %s: %w", p.lane, err)
	}
	stateKey := string(p.lane.stateKey())
	var idx []int // the short leases to promote
	for i, l := range running {
		if !l.Short() {
			continue
		}
		if string(l.zl.ptr.lane.stateKey()) != stateKey || l.zl.ptr.token != p.token {
			return nil, fmt.Errorf("quick: hand back %s: %w: job %s was handed out under another lane lease", p.lane, ErrInvalidOption, l.ID)
		}
		idx = append(idx, i)
	}
	now := q.Now()
	deadlineMs := now.Add(lease).UnixMilli()
	out := append([]Lease(nil), running...)
	committed := append([]Lease(nil), running...)
	errs := make([]error, len(running))
	applied := make([]bool, len(running))
	toks := zleaseTokens(running)
	// One transaction at least: the last hands the lane back.
	for start, last := 0, false; !last; {
		end := zmoveSplit(len(idx), func(j int) Lease { return running[idx[j]] }, start)
		last = end == len(idx)
		err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
			return q.handBackTx(tr, &p, running, idx[start:end], last, now, deadlineMs, toks, out, errs, applied, maybeCommitted)
		})
		if err != nil {
			return committed, fmt.Errorf("quick: hand back %s: %w", p.lane, err)
		}
		for _, i := range idx[start:end] {
			committed[i] = out[i]
		}
		start = end
	}
	return out, zlostErrors("hand back", errs)
}

// handBackTx promotes the running short leases idx (of running) to per-job
// leases until deadlineMs and, when last, hands the lane back. maybe says
// an earlier attempt may have committed: a lease found gone then is looked
// for where that attempt moved it (toks are fixed before the retry loop),
// and a lane found released is that attempt's own hand-back when every
// lease it promoted is where it put it.
func (q *Queue) handBackTx(tr kv.Transaction, p *LaneLease, running []Lease, idx []int, last bool, now time.Time,
	deadlineMs int64, toks []uint64, out []Lease, errs []error, applied []bool, maybe bool) error {
	var holds zholds
	holds.read(tr, p)
	fs := make([]kv.Future[[]byte], len(idx))
	for j, i := range idx {
		fs[j] = leaseRead(tr).Get(running[i].zl.key(running[i].ID))
	}
	s, err := holds.state(p)
	if err != nil {
		if !IsLaneLost(err) || !maybe || !last {
			return err
		}
		// Released by this call's earlier attempt, or taken over?
		for _, i := range idx {
			if !applied[i] {
				continue
			}
			moved, ok, merr := q.zmovedTo(tr, running[i], deadlineMs, toks[i])
			if merr != nil {
				return merr
			}
			if !ok {
				return err
			}
			out[i], errs[i] = moved, nil
		}
		return nil
	}
	for j, i := range idx {
		l := running[i]
		v, err := q.zheld(&holds, fs[j], l)
		if err != nil {
			if !IsLeaseLost(err) {
				return err
			}
			out[i], errs[i] = l, err
			if maybe && applied[i] {
				moved, ok, merr := q.zmovedTo(tr, l, deadlineMs, toks[i])
				if merr != nil {
					return merr
				}
				if ok {
					out[i], errs[i] = moved, nil
				}
			}
			continue
		}
		out[i], errs[i] = q.zmoveTx(tr, l, v, now, deadlineMs, toks[i], false), nil
		applied[i] = true
	}
	if !last {
		return nil
	}
	// The lane's next work, seen after the promotions above (a snapshot
	// read sees this transaction's writes): the promoted keys now vest at
	// deadlineMs. releaseLane's read-conflict range up to that first key
	// makes an enqueue placed before it meanwhile fail this commit.
	nowMs := now.UnixMilli()
	key, vestMs, err := q.laneFirst(tr, p.lane, nowMs)
	if err != nil {
		return err
	}
	held := *p
	held.Deadline = time.UnixMilli(s.PtrMs) // where the pointer is
	if key == nil {
		return q.releaseLane(tr, &held, -1, nil)
	}
	return q.releaseLane(tr, &held, max(vestMs, nowMs), key)
}
