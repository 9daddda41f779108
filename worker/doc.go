// Package worker runs handlers per task type against a quick.Queue.
//
// A Worker holds one runner per registered task type. Each runner finds
// work through the task type's pointer index (quick.Consumer.Claim) with a
// few claim loops in flight at once, each on at most one lane of a zone at
// a time (claim.go); keeps the lanes of short-job task types while their
// jobs run (short.go); and has a waker that lets an idle claim loop sleep
// on an FDB watch of the task type's wake key instead of polling. Shared by
// every runner, a lease keeper renews the leases of running jobs with few
// ExtendMany transactions per round, and an acker commits completions and
// failures in batches: one quick.Ack call takes every ack queued while the
// previous commit was in flight.
//
// A handler's outcome maps onto the queue's acks: nil completes the job, an
// error fails it (the queue retries it after a backoff), Snooze(d) snoozes
// it, Cancel(reason) cancels it (quick.AckCancel: not a dead letter), and a panic is a failure whose text
// carries the stack. A handler whose work is FDB writes can commit them with
// the job's completion in one transaction (Job.CompleteWith).
//
// A running job is tracked by its run (job ID and claim token), not its ID:
// if the worker's own claim takes a job again after a renewal could not
// happen in time, the two runs are renewed, cancelled and counted apart.
//
// A worker claims only while its clock is close enough to the other
// workers' (within an eighth of its shortest lease, error included: the
// shorter of its handlers' job lease and the queue's LaneLeaseTime, so
// 625 ms with the defaults),
// compared through a bounded sample of their clocks (clockguard.go);
// otherwise it stands by. The same round writes the worker's presence
// record, which ListWorkers reads (presence.go). Nothing in the claim path
// reads other workers' records: there is no membership and no assignment
// (docs/design.md, "The worker").
//
// Background duties (Duty: purging enqueue markers and dead letters past
// the retention, cron's repair, or any added with Config.Duties or
// AddDuty) are shared by the running workers: exactly one runs each duty per
// period, taking it with a small record in the database, with no leader.
//
// Time comes from one clock.Clock: every loop sleeps through its After, so
// a test drives a worker (and the in-memory engine, given the same clock)
// with one clock.Fake and no real sleeping.
//
// Graceful shutdown (Stop, or Run's context ending) stops claiming, gives
// running jobs Config.ShutdownTimeout to finish, then cancels the rest and
// releases their jobs so other workers take them at once, flushes the
// acks, hands its lanes back and clears its presence record. No job stays
// leased by a worker that exited cleanly.
package worker
