// Package soak is the harness behind `quickbench soak`: producers, workers
// and cron chains run against one queue while the harness breaks things on
// purpose — it kills workers without cleanup, injects
// commit_unknown_result (both outcomes) and conflicts through kv.WithFaults,
// runs each worker on its own skewed clock, and pauses handlers past their
// lease — and then a checker reads the whole history and the final database
// and reports every violation of what the queue promises:
//
//   - every enqueued job ran at least once and ended completed (or, for the
//     jobs built to always fail, dead-lettered); none was lost or created
//     twice;
//   - no write under a stale lease token committed: handlers complete in a
//     transaction that also writes a history record keyed by (job, token),
//     so only committed completions leave one; each job must have exactly
//     one, under the token of the job's last claim;
//   - every cron occurrence completed once and scheduled exactly one
//     successor, and each chain is unbroken.
//
// Handler overlaps (a paused worker waking after its lease lapsed while the
// job's next holder runs it) are at-least-once delivery, not violations:
// they are counted and reported.
package soak
