// Package worker runs handlers per task type against a quick.Queue.
//
// A Worker holds one runner per registered task type. Each runner has a
// claim loop with Concurrency slots that claims, in one transaction, as many
// vested jobs as it has free slots, from the lanes its lanes.Tracker assigns
// it; a heartbeat loop that keeps the Tracker alive; and a waker that lets
// an idle claim loop sleep on an FDB watch of the task type's wake key
// instead of polling. Shared by every runner, a lease keeper renews the
// leases of running jobs with few ExtendMany transactions per round, and an
// acker commits completions and failures in batches: one quick.Ack call
// takes every ack queued while the previous commit was in flight.
//
// A handler's outcome maps onto the queue's acks: nil completes the job, an
// error fails it (the queue retries it after a backoff), Snooze(d) snoozes
// it, Cancel(reason) dead-letters it, and a panic is a failure whose text
// carries the stack. A handler whose work is FDB writes can commit them with
// the job's completion in one transaction (Job.CompleteWith).
//
// A running job is tracked by its run (job ID and claim token), not its ID:
// if the worker's own claim takes a job again after a renewal could not
// happen in time, the two runs are renewed, cancelled and counted apart.
//
// A runner claims only while the lanes registry finds its clock close
// enough to the task type's shared time reference (lanes.Tracker.Standby:
// within an eighth of the lease, error included); otherwise it stands by
// and the other workers watch its lanes.
//
// On a queue opened with quick.LayoutZones a runner finds work through the
// task type's pointer index (quick.Queue.ClaimZone) with a few claims in
// flight at once, joins the lanes registry only while schema-1 jobs of its
// type are left (it drains them beside the zones), keeps the lanes of
// short-job task types while their jobs run, and compares its clock with a
// bounded sample of the other workers' instead of the whole registry
// (docs/design.md, "Worker in the zones layout").
//
// Background duties (Duty: purging enqueue markers and dead letters past
// the retention, cron's repair, or any added with Config.Duties or
// AddDuty) are shared by the running workers: exactly one runs each duty per
// period, taking it with a small record in the database, with no leader.
//
// Time comes from one clock.Clock: every loop sleeps through its After, and
// the lanes heartbeat ticks on its NewTicker, so a test drives a worker (and
// the in-memory engine, given the same clock) with one clock.Fake and no
// real sleeping.
//
// Graceful shutdown (Stop, or Run's context ending) stops claiming, gives
// running jobs Config.ShutdownTimeout to finish, then cancels the rest and
// releases their jobs so other workers take them at once, flushes the
// acks and leaves the lanes registry. No job stays leased by a worker that
// exited cleanly.
package worker
