// Package killcheck is the check that quickfdb survives processes that die
// for real on a real FoundationDB (issue 14, item 3): producers and
// workers are separate OS processes, a worker is killed with SIGKILL in the
// middle of a job it has checkpointed, and the fdbserver itself is killed
// and started again on the same data directory mid-run. The thin script
// scripts/fdb-kill-check builds cmd/killcheck with -tags fdb and runs it
// against a server it is given; it never builds or installs FoundationDB.
//
// # The job and what it records
//
// Every process runs the same binary. The task type is "killcheck.steps":
// a job of Steps.N steps that checkpoints after each step
// (worker.Job.Checkpoint) and completes with worker.Job.CompleteWith, whose
// transaction also writes the job's completion record. Under the run's app
// subspace A (beside the queue's subspace Q):
//
//	A("enq", id)   = ""            written in the transaction that inserts the job (InsertTx)
//	A("done", id)  = JSON Done     written in the transaction that completes it (CompleteWith)
//	A("count", id) += 1            atomic add, same transaction
//
// So a job completed twice by the queue's own writes shows count 2, and a
// lost job shows an "enq" record with no "done". The checker (Check) reads
// these records, the queue's own view of every job (Queue.Get: gone or
// finished), the task type's listing (empty) and its dead letters (none).
//
// # Scenarios
//
//   - worker-kill: two worker processes, one producer process; one job
//     (HangAt) blocks on its first attempt right after it checkpointed step
//     HangAt, and the worker running it is killed with SIGKILL there; the
//     other worker must finish every job, that one resumed from step HangAt
//     at attempt 2. It runs against the server of -cluster-file, or one it
//     starts as server-restart does when given only -fdb-bin. Other jobs the killed worker held must resume from the
//     last checkpoint it reported (or the one after, if it died between a
//     checkpoint's commit and its report).
//
//   - server-restart: the check starts its own fdbserver (from -fdb-bin) on
//     a data directory with "configure new single ssd", runs a producer and
//     two workers, kills the fdbserver with SIGKILL once a third of the
//     jobs are done, starts it again on the same data directory, and checks
//     that every job is completed exactly once and that the completions
//     made before the kill survived it.
//
//   - short-batch (also -short-batch): the queue in the zones layout with
//     the task type in short-job mode (QueueOptions(LayoutShort): a claim hands
//     jobs out under its lane lease and writes nothing per job). Two worker
//     processes of 8 slots with -hang-short (Handler.HangShort: the first
//     attempt of a job handed out under a short lease blocks before its
//     first step) and a producer of 8 jobs: the worker that leases the
//     zone's lane first is handed them all, and is killed with SIGKILL
//     while it holds them. The other must take the lane over once its
//     lease lapses and complete every job with per-job leases, each at
//     attempt 2 (the takeover counts the dead worker's runs through the
//     lane's hand-out mark), none lost, none completed twice.
package killcheck
