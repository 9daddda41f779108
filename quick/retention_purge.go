package quick

import (
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// FinishedPurge is what one PurgeFinished call did.
type FinishedPurge struct {
	// Purged is how many finished records were deleted (with their expiry
	// entries).
	Purged int
	// Quarantined is how many entries did not decode (an expiry key, or the
	// finished record it points to): each was moved to the quarantine
	// (ListQuarantined), so it never stands in front of the others.
	Quarantined int
	// More is set when the call stopped at its limit with expired records
	// left.
	More bool
}

// PurgeFinished deletes the finished records (retention.go) whose
// retention has ended, oldest expiry first, at most limit of them (default
// and at least 1: 10,000), in transactions of at most purgeFinishedBatch.
// The cleanup duty of package worker calls it; a program without workers
// calls it now and then.
//
// A finished record whose expiry entry is not its own (the job finished
// again later, with a later expiry) is kept: only the stale entry goes. An
// entry that does not decode, or points to a record that does not decode,
// goes to the quarantine and is counted; it never blocks the purge.
//
// Keys, per transaction: one range read of S (1, "fx") up to now (at most
// purgeFinishedBatch keys, serializable: two purges at once conflict and
// one retries), point reads of S (1, "f", id) of each; clears of both, or
// the quarantine's writes (quarantineRaw).
func (q *Queue) PurgeFinished(ctx context.Context, limit int) (FinishedPurge, error) {
	if limit <= 0 {
		limit = 10_000
	}
	var out FinishedPurge
	for out.Purged+out.Quarantined < limit {
		batch := min(purgeFinishedBatch, limit-out.Purged-out.Quarantined)
		var res FinishedPurge
		var n int
		err := q.db.Transact(ctx, func(tr kv.Transaction) error {
			var err error
			res, n, err = q.purgeFinishedTx(tr, batch)
			return err
		})
		if err != nil {
			return out, fmt.Errorf("quick: purge finished jobs: %w", err)
		}
		out.Purged += res.Purged
		out.Quarantined += res.Quarantined
		if n < batch {
			return out, nil
		}
	}
	out.More = true
	return out, nil
}

// purgeFinishedTx purges up to batch expired entries; n is how many
// expiry entries it read.
func (q *Queue) purgeFinishedTx(tr kv.Transaction, batch int) (FinishedPurge, int, error) {
	now := q.Now()
	space := q.finXSpace()
	r := rangeOf(space)
	if !mutant.On("quick.finished-expiry") {
		// Entries that expire at or before now.
		r.End = space.Pack(tuple.Tuple{now.UnixMilli() + 1})
	}
	kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: batch}).GetSliceWithError()
	if err != nil {
		return FinishedPurge{}, 0, err
	}
	type entry struct {
		kv.KeyValue
		expMs int64
		id    ID
		rec   kv.Future[[]byte]
	}
	var res FinishedPurge
	entries := make([]entry, 0, len(kvs))
	for _, e := range kvs {
		ms, id, err := q.parseFinX(e.Key)
		if err != nil {
			q.quarantineRaw(tr, now, e.Key, e.Value, err)
			res.Quarantined++
			continue
		}
		entries = append(entries, entry{KeyValue: e, expMs: ms, id: id, rec: tr.Get(q.finKey(id))})
	}
	for _, e := range entries {
		tr.Clear(e.Key)
		fk := q.finKey(e.id)
		fv, err := e.rec.Get()
		if err != nil {
			return FinishedPurge{}, 0, err
		}
		if fv == nil {
			continue // purged with another entry of its ID
		}
		rec, err := decodeFinished(e.id, fv)
		switch {
		case err != nil:
			q.quarantineRaw(tr, now, fk, fv, err)
			res.Quarantined++
		case rec.ExpireAtMs > e.expMs:
			// Finished again since, with a later expiry: its own entry
			// purges it then.
		default:
			tr.Clear(fk)
			res.Purged++
		}
	}
	return res, len(kvs), nil
}
