package quick

import "github.com/quickfdb/quickfdb/kv"

// The lookup index of trackable zones-layout jobs. STUB: replaced by the
// zones-inspect branch.

// indexSet records where a trackable job's key is (flags has flagTrackable);
// every write that places or moves a zones-layout job key calls it. It
// writes nothing for other jobs.
func (q *Queue) indexSet(tr kv.Transaction, l laneRef, vestMs int64, id ID, flags uint64) {}

// indexClear removes a trackable job's lookup index entry when its key is
// removed for good (completed, cancelled, dead-lettered).
func (q *Queue) indexClear(tr kv.Transaction, id ID, flags uint64) {}
