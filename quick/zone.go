package quick

import (
	"errors"
	"time"
)

// The second level (LayoutZones, schema 2; docs/design.md "Two levels").
//
// QuiCK keeps one small queue per tenant, stored with the tenant's data,
// and a top-level index of the queues that have work, from which consumers
// lease. Here a zone is the queue of one (item space, task type): its jobs
// are keys ordered by vesting time, spread over the zone's hash lanes
// (usually one; a busy zone grows more so that many workers can work it).
// Every lane that holds a job has one entry in the task type's pointer
// index, ordered by when the lane next has work (new vested work by its
// second, a lane handed back by the ms of the hand-back; then by a hash of
// zone and lane). A worker reads a few entries from a random place among
// the oldest vested ones, picks one at random (so workers rarely collide;
// pointer.go, acquire), leases the lane for a short time (PointerLease),
// takes a batch of its vested jobs with per-job leases exactly as the
// lanes layout does, and hands the lane back with its next vesting time:
// a lane with more vested work goes behind every lane already waiting,
// which is what makes the index round-robin between tenants.
//
// The invariant every operation keeps: a lane that holds any job key has a
// lane state Z (1, prio, lane) and one pointer at the lane state's PtrMs;
// while the lane is not leased that pointer vests no later than the lane's
// earliest key, or has already vested (a lane handed back with vested jobs
// left goes behind the other vested pointers, at the hand-back's ms; a
// pointer written already vested for new work is filed at the last ms of
// the second before the job's, which is earlier than the job that needed
// it). A write that places a job key
// (enqueue, fail, snooze, release, requeue, run-now) goes through cover,
// which reads the lane state serializably; a worker that hands a lane back
// reads the lane's keys before the new vesting time serializably. So an enqueue racing the removal of
// its lane's pointer either conflicts (and retries, creating a pointer) or
// makes the removal conflict (and retry, seeing the job): no job is left
// without a pointer. Lane states change only when a lane is leased, handed
// back, created, removed or pulled earlier, so enqueues into a busy zone
// rarely conflict with the workers draining it.

// ErrPointerLost is wrapped when a worker's lease on a lane (PointerLease)
// is gone: it lapsed and another worker took the lane.
var ErrPointerLost = errors.New("quick: lane lease lost")

// PointerLease is a worker's lease on one lane of one zone, taken from the
// pointer index. It is a value; operations that renew it return the new one.
type PointerLease struct {
	TaskType  string
	ItemSpace string
	Priority  Priority
	Lane      int
	// Deadline is when the lease lapses unless renewed or handed back.
	Deadline time.Time
	Holder   string
	// Lapsed is set when the lane was taken over from a holder whose lease
	// lapsed without handing it back. In short-job mode the jobs that holder
	// was running may run again: they are claimed with per-job leases, so
	// their attempts are counted, the lapsed holder's runs included (the
	// lane's hand-out mark, countLapsedShort).
	Lapsed bool
	// Short is set when the lane is leased in short-job mode.
	Short bool

	lane   laneRef
	token  uint64
	cursor []byte // short-job mode: the last job key handed out
	// lapsedShort is the token of the short-job lease this one took over
	// (Lapsed, and the lapsed holder handed jobs out without writing
	// them): the takeover counts their runs (countLapsedShort).
	lapsedShort uint64
	// unsaved is set between acquire and the end of the claim's
	// transaction: the lease is not written yet, and the pointer is still
	// at fromMs. A claim that hands the lane back in the same transaction
	// so writes the lane state and the pointer once, not twice (saveHold
	// writes the lease when the claim keeps the lane).
	unsaved bool
	fromMs  int64
}

// ZoneClaimOptions shape one claim from the zones layout.
type ZoneClaimOptions struct {
	// TaskType, Holder, Max, Lease, MaxBytes, Timeout, BatchPriority and
	// Tag as in Claim; Lanes and ScanLimit do not apply.
	ClaimOptions
	// Pointer continues on a lane this worker holds (from an earlier
	// ZoneClaimed.Pointer); nil takes a lane from the pointer index.
	Pointer *PointerLease
	// Peek is how many pointers of each priority a claim reads to pick
	// one vested at random; default 8.
	Peek int
	// PeekHead reads the Peek pointers at the head of the index, which
	// every claimer reads alike, instead of starting at a random place in
	// the oldest vested second: the choice before the random start, kept
	// to compare (quickbench scale); concurrent claims collide more.
	PeekHead bool
	// Keep keeps the lane leased after the claim when it still has vested
	// jobs, so that the next claim continues on it (ZoneClaimed.Pointer);
	// without it the claim hands the lane back in its own transaction.
	Keep bool
}

// ZoneClaimed is the outcome of a claim from the zones layout.
type ZoneClaimed struct {
	Claimed
	// Pointer is the lane still leased (Keep was set and the lane has more
	// vested jobs); nil when the lane was handed back or none was vested.
	Pointer *PointerLease
}

// zoneLease is what a zones-layout Lease carries besides the public fields.
type zoneLease struct {
	lane   laneRef
	vestMs int64 // the vesting time in its key: key = lane.jobKey(vestMs, ID)
	v      zjobValue
	// ptr is set in short-job mode: the lane lease that protects the job,
	// whose key did not move when it was handed out.
	ptr *PointerLease
}
