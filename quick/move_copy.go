package quick

import (
	"bytes"
	"context"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// The copy of a move, one batch at a time, three transactions a batch:
//
//  1. at the source, read the zone's first jobs (serializable) and revoke
//     their per-job leases (the key stays; its token, holder and lease
//     start are cleared): an ack, extension or checkpoint of such a lease
//     then finds no token and fails with ErrLeaseLost, so a job leased at
//     the fence runs at most once more, at the destination, where it vests
//     at its old lease's deadline;
//  2. at the destination, write them under the destination zone, with
//     their payload and checkpoint blobs, lookup index entries and unique
//     keys: idempotent (the same keys and values), and the destination's
//     lanes are fenced until the move adopts them, so nothing there moves
//     them meanwhile;
//  3. at the source, clear each job whose value is still the one copied,
//     with its blobs and (when the destination is another queue) its
//     index entry and unique key, and count it in the move record.
//
// The batch is always the zone's first keys: a job enqueued into the source
// during the move is copied by a later batch, and a crash between 2 and 3
// copies the same batch again. A job changed at the source between 1 and 3
// (a RunNow or Cancel by ID) is left to the source's truth: its copy is
// cleared at the destination and its new key, if any, copied later.

// moveBatchBytes bounds the bytes one batch carries (keys, values and
// blobs); a batch always carries at least one job.
const moveBatchBytes = 2 << 20

// movedJob is one job key of a batch.
type movedJob struct {
	key   []byte // at the source
	value []byte // as stored at the source after the revoke
	// ok is set when key and value decode; a corrupt entry is carried as
	// it is (the destination's claims quarantine it).
	ok         bool
	jk         zjobKey
	v          zjobValue
	blob, ckpt []byte
	// vestMs is when the copy vests: the key's time, or the deadline of the
	// short-job lane lease the fence displaced when that is later (the
	// job may be handed out under it: laneState.HeldMs).
	vestMs int64
}

// dstKey is the job's key under dst: the source key's suffix, or the same
// key at a later vesting time when the job waits out a displaced short-job
// lane lease.
func (j *movedJob) dstKey(dst, src zone) []byte {
	if j.ok && j.vestMs > j.jk.VestMs {
		return dst.jobKey(j.jk.Priority, j.jk.Lane, j.vestMs, j.jk.ID)
	}
	return append(bytes.Clone(dst.space.Bytes()), j.key[len(src.space.Bytes()):]...)
}

// readMoveBatch reads and revokes the first jobs of src (step 1).
//
// Keys: a range read of Z (0) of at most limit keys (serializable); Z (3,
// id) and Z (4, id) of jobs with blobs; the lane state Z (1, prio, lane)
// of each lane the batch touches (snapshot: the fence wrote it and holds
// it); a set of each leased job key.
func (q *Queue) readMoveBatch(ctx context.Context, src zone, limit int) ([]movedJob, error) {
	var out []movedJob
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		out = out[:0]
		kvs, err := tr.GetRange(src.jobs(), kv.RangeOptions{Limit: limit}).GetSliceWithError()
		if err != nil {
			return err
		}
		type blobs struct{ b, c kv.Future[[]byte] }
		fs := make([]blobs, 0, len(kvs))
		size := 0
		for _, kvp := range kvs {
			if len(out) > 0 && size+len(kvp.Key)+len(kvp.Value) > moveBatchBytes {
				break
			}
			j := movedJob{key: kvp.Key, value: kvp.Value}
			var f blobs
			jk, kerr := src.parseJobKey(kvp.Key)
			if kerr == nil && j.v.unmarshal(kvp.Value) == nil {
				j.ok, j.jk = true, jk
				if j.v.Token != 0 && !mutant.On("quick.move-revoke") {
					j.v.Token, j.v.Holder, j.v.LeasedAtMs = 0, "", 0
					j.value = j.v.marshal()
					tr.Set(kvp.Key, j.value)
				}
				if j.v.Flags&flagBlob != 0 {
					f.b = tr.Get(src.blobKey(jk.ID))
				}
				if j.v.Flags&flagCkptBlob != 0 {
					f.c = tr.Get(src.ckptKey(jk.ID))
				}
			}
			size += len(kvp.Key) + len(j.value)
			out = append(out, j)
			fs = append(fs, f)
		}
		// A lane whose fence displaced a short-job lease (HeldMs) may have
		// its jobs handed out until that lease's deadline: their copies
		// vest then, as a per-job lease's copy vests at its deadline.
		states := map[[2]int]kv.Future[[]byte]{}
		for _, j := range out {
			if !j.ok {
				continue
			}
			k := [2]int{int(j.jk.Priority), j.jk.Lane}
			if states[k] == nil {
				states[k] = tr.Snapshot().Get(laneRef{z: src, prio: j.jk.Priority, lane: j.jk.Lane}.stateKey())
			}
		}
		held := make(map[[2]int]int64, len(states))
		for k, f := range states {
			v, err := f.Get()
			if err != nil {
				return err
			}
			var st laneState
			if v != nil && st.unmarshal(v) == nil {
				held[k] = st.HeldMs
			}
		}
		for i := range out {
			j := &out[i]
			j.vestMs = j.jk.VestMs
			if h := held[[2]int{int(j.jk.Priority), j.jk.Lane}]; j.ok && h > j.vestMs {
				j.vestMs = h
			}
		}
		for i, f := range fs {
			if f.b != nil {
				if out[i].blob, err = f.b.Get(); err != nil {
					return err
				}
			}
			if f.c != nil {
				if out[i].ckpt, err = f.c.Get(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, err
}

// writeMoveBatch writes a batch under dst (step 2), in the queue to.
//
// Keys: per job a set of Z (0, ...) and of its blobs Z (3, id), Z (4, id),
// S (2, "i", id) when trackable; for a job with a unique key, a read of
// S (1, "u", type, key) and a set of it when no job holds it.
func (to *Queue) writeMoveBatch(ctx context.Context, dst zone, jobs []movedJob, src zone) error {
	return to.transact(ctx, func(tr kv.Transaction, _ bool) error {
		uniq := make([]kv.Future[[]byte], len(jobs))
		for i, j := range jobs {
			if j.ok && j.v.UniqueKey != "" {
				uniq[i] = tr.Get(to.k.uniqKey(dst.taskType, j.v.UniqueKey))
			}
		}
		for i, j := range jobs {
			tr.Set(j.dstKey(dst, src), j.value)
			if !j.ok {
				continue
			}
			id := j.jk.ID
			if j.blob != nil {
				tr.Set(dst.blobKey(id), j.blob)
			}
			if j.ckpt != nil {
				tr.Set(dst.ckptKey(id), j.ckpt)
			}
			to.indexSet(tr, laneRef{z: dst, prio: j.jk.Priority, lane: j.jk.Lane}, j.vestMs, id, j.v.Flags)
			if uniq[i] != nil {
				held, err := uniq[i].Get()
				if err != nil {
					return err
				}
				switch {
				case held == nil:
					tr.Set(to.k.uniqKey(dst.taskType, j.v.UniqueKey), id[:])
				case !bytes.Equal(held, id[:]):
					to.opts.Logger.Warn("quick: a moved job's unique key is held by another job at the destination; the moved job keeps running without it",
						"task_type", dst.taskType, "item_space", dst.itemSpace, "id", id.String())
				}
			}
		}
		return nil
	})
}

// clearMoveBatch clears at the source the jobs of a batch still as copied
// (step 3) and counts them in the move record; it returns how many it
// cleared and the jobs changed at the source since step 1 (stale copies).
// sameIndex is set when source and destination are one queue (one
// database and subspace): the lookup index and unique keys are shared,
// and step 2 already pointed them at the destination.
//
// Keys: per job a read of its key (serializable), and a clear of it and
// its blobs; when not sameIndex, a clear of S (2, "i", id) and, for a job
// with a unique key, a read of S (1, "u", type, key) and a clear of it
// when it names the job; a read and a set of S (1, "mv", itemSpace, type).
func (q *Queue) clearMoveBatch(ctx context.Context, src zone, jobs []movedJob, sameIndex bool) (int, []movedJob, error) {
	var cleared, mine int
	var stale []movedJob
	recKey := q.k.moveKey(src.itemSpace, src.taskType)
	err := q.transact(ctx, func(tr kv.Transaction, maybeCommitted bool) error {
		cleared, mine, stale = 0, 0, stale[:0]
		cur := make([]kv.Future[[]byte], len(jobs))
		uniq := make([]kv.Future[[]byte], len(jobs))
		for i, j := range jobs {
			cur[i] = tr.Get(j.key)
			if !sameIndex && j.ok && j.v.UniqueKey != "" {
				uniq[i] = tr.Get(q.k.uniqKey(src.taskType, j.v.UniqueKey))
			}
		}
		recF := tr.Get(recKey)
		for i, j := range jobs {
			v, err := cur[i].Get()
			if err != nil {
				return err
			}
			if !bytes.Equal(v, j.value) {
				if v == nil && maybeCommitted {
					mine++ // this step's earlier attempt cleared it
					continue
				}
				stale = append(stale, j)
				continue
			}
			tr.Clear(j.key)
			cleared++
			if !j.ok {
				continue
			}
			id := j.jk.ID
			if j.v.Flags&flagBlob != 0 {
				tr.Clear(src.blobKey(id))
			}
			if j.v.Flags&flagCkptBlob != 0 {
				tr.Clear(src.ckptKey(id))
			}
			if sameIndex {
				continue
			}
			q.indexClear(tr, id, j.v.Flags)
			if uniq[i] != nil {
				held, err := uniq[i].Get()
				if err != nil {
					return err
				}
				if bytes.Equal(held, id[:]) {
					tr.Clear(q.k.uniqKey(src.taskType, j.v.UniqueKey))
				}
			}
		}
		rv, err := recF.Get()
		if err != nil {
			return err
		}
		var rec moveRecord
		if rv != nil && rec.unmarshal(rv) == nil && cleared > 0 {
			rec.Done += int64(cleared)
			tr.Set(recKey, rec.marshal())
		}
		return nil
	})
	return cleared + mine, stale, err
}

// dropStaleCopies clears at the destination the copies of jobs changed at
// the source after they were copied: the source's version is the job.
//
// Keys: per job a clear of its key and blobs at dst, and of S (2, "i", id)
// when the destination is another queue.
func (to *Queue) dropStaleCopies(ctx context.Context, dst, src zone, stale []movedJob, sameIndex bool) error {
	if len(stale) == 0 {
		return nil
	}
	return to.transact(ctx, func(tr kv.Transaction, _ bool) error {
		for _, j := range stale {
			tr.Clear(j.dstKey(dst, src))
			if !j.ok {
				continue
			}
			tr.Clear(dst.blobKey(j.jk.ID))
			tr.Clear(dst.ckptKey(j.jk.ID))
			if !sameIndex {
				to.indexClear(tr, j.jk.ID, j.v.Flags)
			}
		}
		return nil
	})
}
