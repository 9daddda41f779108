// Package quick is a QuiCK-style job queue over FoundationDB.
//
// # Two levels
//
// Every job belongs to a zone: the small queue of one tenant (its item
// space, NewJob.ItemSpace; "" is the no-tenant zone) and one task type, kept
// under Options.ZoneSpace (by default under the queue's subspace), next to
// the tenant's data if you like. In a zone a job is one key ordered by its
// vesting time (when it may run), in one of the zone's hash lanes (package
// lanes: usually one; a busy zone grows more so that several workers drain
// it at once). Every lane that holds a job has one entry in its task type's
// pointer index, ordered by when the lane next has work. A consumer takes a
// lane from the index, claims the lane's vested jobs by moving their keys
// to the lease's deadline, and hands the lane back: if it dies, the jobs
// vest again and another consumer takes them, and a tenant with a million
// jobs never stands in front of another's. docs/design.md has the key
// layout, the invariant and the cost of each operation in FDB reads and
// writes.
//
// Every operation is one FDB transaction, and the ones a user needs inside
// their own transaction come in a Tx form: EnqueueTx (InsertTx) commits
// jobs with the caller's writes, AckTx completes a job with the writes its
// handler made. Time comes from an injectable clock (package clock).
//
// # Which enqueue call, which ID
//
// Two calls make jobs, one over the other; neither is deprecated:
//
//   - Insert, InsertTx, InsertMany and InsertManyTx take typed arguments
//     (a JobArgs: a Go type whose Kind is the task type, encoded as JSON)
//     and InsertOpts. Use them when the job's arguments are a Go type and
//     its handler is registered with worker.Register: the type ties the
//     producer to the handler. Most programs need only these.
//   - Enqueue and EnqueueTx take NewJob values: a task type and a raw
//     payload. Use them when the payload is bytes you did not make from a
//     Go type (another service's message, a file, the quick CLI), for
//     handlers registered with worker.RegisterRaw, or to enqueue jobs of
//     several task types in one call. Insert is Enqueue after encoding the
//     arguments; both cost the same.
//
// A job's ID is generated when you leave it zero. Make one yourself only to
// enqueue inside your own transaction's retry loop (make it once, before
// the loop, so a retry after commit_unknown_result finds the job the first
// attempt made): with q.NewID(), which reads the queue's clock, so the ID's
// time agrees with the idempotency window the queue checks it against
// (with an injected clock, as in tests, quick.NewID(time.Now()) does not).
// quick.NewID(t) is for code without a Queue at hand, or a time of its own.
//
// Beyond the job's life: Get, Cancel and RunNow find a job by ID (through
// its lookup index, kept unless its task type is Untracked); Wait blocks
// until a waitable job (NewJob.Waitable, Options.WaitableTypes) finishes,
// on a kv watch rather than by polling, and Outcome tells completed,
// dead-lettered and cancelled apart; a task type or job with retention
// (TaskTypeOptions.Retain, NewJob.Retain) keeps a finished record of each
// completed or cancelled job, which Get shows (StateCompleted,
// StateCancelled) until PurgeFinished deletes it; Pause and Resume stop and restart the
// worker runtime's claims of a task type; CancelMatching and
// RequeueMatching act on the jobs a Filter selects, in bounded batches.
//
// # Writing a consumer
//
// Applications enqueue, inspect and control jobs through Queue. Package
// worker is the consumer most programs need; a program that runs jobs its
// own way uses the claim protocol, Queue.Consumer, directly:
//
//   - Consumer.Claim leases up to ClaimOptions.Max vested jobs of a task
//     type from one lane, each with a Lease of its own (or, in short-job
//     mode, TaskTypeOptions.ShortJobs, under the lane's lease). With
//     ClaimOptions.Keep the lane stays leased while it has vested jobs
//     (Claimed.Lane): pass it back as ClaimOptions.Lane to continue on it,
//     renew it with ExtendLane, and give it back with ReleaseLane (or, in
//     short-job mode, HandBack, which first moves the jobs still running to
//     leases of their own). A lost lane lease is ErrLaneLost (IsLaneLost).
//   - A process with several claim goroutines reads the index from one of
//     them: ClaimOptions.Scan makes its claims also return other vested
//     lanes, one per zone (Claimed.Candidates), which the others claim with
//     ClaimOptions.From without reading the index. A candidate leased by
//     another claim since comes back as Claimed.Missed, not an error; the
//     claims of one process are then on distinct lanes and never race each
//     other (package worker does this: one scanner per task type).
//   - When Claim takes nothing, Claimed.NextVest says when to look again;
//     sleep until then (a vesting job writes nothing that could wake you).
//   - Each job's lease is ended with the Queue's lease operations, which
//     handlers use too: Complete, Fail, Snooze, Release, DeadLetter, or many
//     at once with Ack; renewed with Extend or ExtendMany; progress is
//     stored with Checkpoint. A lease lost to another holder is a
//     *LeaseLostError (IsLeaseLost): stop the run, its job is someone
//     else's.
//   - Leases are deadlines on the consumers' clocks: consumers whose clocks
//     disagree by a large part of a lease run jobs twice. Package worker
//     compares its clock with the others' and stands by when it is off.
//
// Claims of different lanes do not conflict, and a claim picks its lane at
// random among the oldest vested ones, so many consumers rarely collide.
package quick
