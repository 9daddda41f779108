// Package soak is the harness behind `quickbench soak`: producers, workers
// and cron chains run against one queue while the harness breaks things on
// purpose — it kills workers without cleanup, injects
// commit_unknown_result (both outcomes) and conflicts through kv.WithFaults,
// runs each worker on its own skewed clock, pauses handlers past their
// lease, enqueues jobs with payloads near quick's 90,000-byte limit and
// one-attempt jobs whose worker vanishes mid-run (so a claim finds them
// exhausted), and edits the cron chains while they run (spec, task type,
// remove and register again) — and then a checker reads the whole history
// and the final database and reports every violation of what the queue
// promises:
//
//   - every enqueued job ran at least once and ended completed (or, for the
//     jobs built to always fail, dead-lettered; for the exhausted ones,
//     dead-lettered by a claim or completed once by their woken holder);
//     none was lost or created twice;
//   - no write under a stale lease token committed: handlers complete in a
//     transaction that also writes a history record keyed by (job, token),
//     so only committed completions leave one; each job must have exactly
//     one, under the token of the job's last claim;
//   - every cron occurrence completed once and scheduled exactly one
//     successor, and each chain is unbroken (one pending occurrence, never
//     none, never two), including the chain whose occurrences have one
//     attempt and are dead-lettered by claims;
//   - no commit failed with 2101 transaction_too_large.
//
// Handler overlaps (a paused worker waking after its lease lapsed while the
// job's next holder runs it) are at-least-once delivery, not violations:
// they are counted and reported. So are the runs of an edited chain's
// occurrence that the edit cancelled while it ran.
//
// The history is read only after every worker is killed and every handler
// run has returned, the transaction that completes a cron occurrence and
// enqueues its successor included (Kill waits for neither, and a commit
// begun before it goes on): reading it while such a commit is in flight
// showed a chain with no pending occurrence and a queued occurrence that
// was no chain's next.
//
// The default Config runs the no-tenant case (one zone per task type);
// Zones runs the same chaos with tenants (zones.go): work jobs over many
// tenants with one hot and a third of them
// in subspaces of their own (Options.ZoneSpace), a second work type in
// short-job mode (TaskTypeOptions.ShortJobs), SetZoneLanes up and down at
// random while workers run, lane leases lapsing as workers are killed or
// frozen, a producer on automatic idempotency where the engine has it,
// and jobs that checkpoint and fail, run longer than a lane lease, are
// delayed, or are dead-lettered and requeued; every tenant name, work job's
// unique key and failure reason is as long as quick takes (Config.LongNames:
// 256, 512 and over 2,000 bytes). The checker also finds a job
// stored twice (queued twice, or queued and dead), claimed twice at one
// attempt, completed by a run that was not its last claim (token, worker
// and attempt: a short-job hand-out keeps the job's token), and lookup
// index entries left behind; it reads what is queued from the zones' keys,
// not through List.
//
// Both configurations also drive what issues 22 and 24 found unguarded
// (prefetch.go, batches.go, unpoint.go, limits.go): cancels of prefetched
// jobs (claimed by a worker and waiting for a slot), with every handler
// started for a lease the worker already knew lost counted through the
// worker's start hook (testhooks.StartedLost; must be 0); enqueue batches
// that repeat earlier calls' IDs and mix given and generated ones, each
// answer checked (a repeat is a duplicate under its own ID, a new job is
// stored) and the new jobs required to finish; lanes stripped of their
// pointer as a copied tenant subspace leaves them, which the cover of the
// next enqueue into the lane must repair (0 lost); and, with tenants,
// concurrency limits of 1 and 5 and a rate, swapped while workers run: the
// checker finds the most runs of a limited tenant at once, from handler
// start to return, and fails past the limit but for runs whose holder
// froze or was killed while they ran (their leases lapsed), which it counts.
//
// The tenants configuration also moves tenants while all of that runs
// (moves.go, Config.MoveEvery): one tenant at a time (not the empty, hot,
// limited or unpointable ones), seeded first with jobs some of which are
// leased when the move fences them, is moved within the database, moved to
// a second database served by workers of its own and back, moved to a
// third that nothing serves and then copied back byte for byte and
// adopted (AdoptTenant) after DeleteTenant cleared it there; and tenants
// made for it are deleted with jobs pending and leased. Every operation
// runs under the commit faults, a third of the calls interrupted after a
// step or batch and resumed; a move holds still for a while once it has
// fenced both zones, and no claim may take the jobs the mover seeded into
// the tenant then. The producers follow each tenant (its route
// names their database and every handle's Options.ZoneSpace), so jobs land
// in a move's source while it runs and after. The checker reads every
// database (each completion's history record is written in its job's
// database, in the completing transaction); a job leased at a move's fence
// runs once more at the destination, which it counts (a short-job
// hand-out's re-run keeps its attempt, and the two claims are then told
// apart by their time), still requiring one completion under the job's
// last claim; a deleted tenant's jobs must never be claimed once its
// deletion returned, and no key of it (nor of a tenant deleted at the
// third database) may be left.
//
// Config.FarSkew runs the first worker far ahead of real time (5 s by
// default): the worker runtime's time reference must have it stand by once
// the others join, with no violation. Commits also fail with 1031 and 1025
// striking them in flight, applied or not, besides 1021 and 1020.
package soak
