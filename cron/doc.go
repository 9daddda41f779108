// Package cron runs recurring jobs on a quick queue with no cron service
// and no leader: each occurrence of a schedule is an ordinary job, and the
// transaction that completes it enqueues the next one.
//
// # The chain
//
// A schedule (Register) is a definition stored beside the queue, at
// ("cron", name) under quick.Queue.Root. Its occurrences are jobs of the
// schedule's TaskType whose RunAt is the scheduled time and whose payload is
// an envelope: the schedule's name, the scheduled time, the definition's
// generation and the schedule's payload. Every occurrence carries the unique
// key "cron:"+name, so quick guarantees at most one pending or running
// occurrence per schedule; and its ID is deterministic (a version 7 UUID of
// the scheduled time whose other bits hash the name, generation and time),
// so a retried transaction, a Register and any number of concurrent repairs
// all name the same job, which quick enqueues once.
//
// A worker runs occurrences with Handle. When the handler succeeds, one
// transaction completes the occurrence (clearing its unique key), reads the
// definition (serializably: a concurrent Register or Remove conflicts),
// computes the next time and enqueues it (if that transaction fails, the
// occurrence runs again shortly, spending no attempt: failed into the
// worker's ack on its last attempt, it would be dead-lettered there with no
// successor). A failed occurrence is retried
// like any job, the chain waiting for it (runs never overlap); when its
// last attempt fails it is dead-lettered, and the same transaction enqueues
// the next (if that transaction fails, the occurrence runs again rather
// than fail without a successor). A handler that returns worker.Cancel
// cancels its occurrence, which is not a dead letter, and the same
// transaction enqueues the next, as after a dead letter: a cancel ends the
// run, and only Remove ends the schedule. A worker that dies mid-run leaves its
// occurrence leased; the lease lapses, another worker runs it, and its
// completion carries on. When the attempts were all spent by workers that
// vanished, the claim that finds it dead-letters it, and the hook Handle
// sets on the queue (quick.DeadLetterHook) enqueues the next in that
// claim's transaction.
//
// # Times
//
// Specs are standard cron (parsed by github.com/netresearch/go-cron):
// five fields, an optional leading seconds field, and descriptors such as
// @daily or @every 5m, read in an IANA time zone (TimeZone or a CRON_TZ=
// prefix; UTC by default, never the host's). The day-of-month and
// day-of-week fields follow the standard OR rule. Daylight saving time: a
// time in a spring-forward gap runs once, just after the jump; a time in a
// fall-back repeated hour runs once, unless the hour field is "*".
//
// The next time is computed from the occurrence's own scheduled time, not
// from when it ran, so late runs and retries do not shift the schedule.
// When that time has already passed (the occurrence ran late), MissedRuns
// decides: RunOnce (the default) enqueues the latest passed time, which
// runs at once, and the schedule carries on from there, so any number of
// missed times run once; SkipAll enqueues the first time after now.
//
// # Repair
//
// A chain breaks only when an occurrence leaves the queue without a
// successor: when someone cancels it by hand, when a claim by a process
// that did not call Handle for its task type dead-letters it, or when its
// definition does not parse. Repair finds the
// schedules without a pending or running occurrence and enqueues their next
// one; it is cheap (a snapshot read of the definitions and one point read
// each) and safe to run anywhere, any number at once. Workers that run cron
// handlers (Handle, HandleTx) run it as a shared duty (RepairDuty): one of
// them every 5 minutes, which bounds how long a chain stays broken. For a
// shorter bound, run RunRepairer in a few processes with a shorter period.
//
// # Periodic jobs on the worker
//
// Periodic declares recurring jobs where a service builds its worker, as
// River's PeriodicJobs: each PeriodicJob is a Schedule and its handler.
// Periodic registers the handlers (and with them the repair duty) and
// stores the schedules with Register, idempotently, so every process that
// runs the jobs declares the same list and nobody registers schedules or
// runs a repairer by hand. Removing a declaration does not remove the
// stored schedule (another binary may declare it); Remove does.
//
// # Changing and removing
//
// Register is idempotent: an unchanged schedule writes nothing. A changed
// one gets a new generation; its pending occurrence is cancelled and the new
// version's next one enqueued, while a running one finishes and its
// completion follows the new definition. While it runs nothing else is
// enqueued, even when the task type changed: quick's unique key is per task
// type, so the new type's key would not stop a second occurrence from
// running beside the first. Remove deletes the definition and cancels the
// pending occurrence; a running one finishes and schedules nothing. An
// occurrence that finds its definition removed or changed when it starts
// completes without running, and its completion still reads the definition
// in its own transaction: a schedule removed and registered again while the
// occurrence ran gets its next occurrence from that completion (Register
// saw the unique key held and enqueued nothing). Register and Remove read
// the unique keys serializably, so a completion that commits while they run
// makes them retry and see its successor.
package cron
