package quick

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
// pointer.go, acquire), leases the lane for a short time (LaneLease),
// takes a batch of its vested jobs with per-job leases and hands the lane back with its next vesting time:
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

// zoneLease is what a Lease carries besides the public fields.
type zoneLease struct {
	lane   laneRef
	vestMs int64 // the vesting time in its key: key = lane.jobKey(vestMs, ID)
	v      zjobValue
	// ptr is set in short-job mode: the lane lease that protects the job,
	// whose key did not move when it was handed out.
	ptr *LaneLease
	// slot is set when the job was claimed under its tenant's concurrency
	// limit: its slot S (1, "ts", ..., "r", vestMs, id) follows the lease
	// (limitgate.go).
	slot bool
}
