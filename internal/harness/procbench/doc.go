// Package procbench is the harness behind `quickbench procs`: a backlog
// drained by worker *processes*, not goroutines of one process as in
// internal/harness/bench, so that the figures include what separate processes cost
// (one FDB client and network thread each, no shared caches, the kernel's
// scheduling) and the CPU they use can be read from their rusage.
//
// For each process count, Run clears the run's subspace, pauses the task
// type, fills the backlog in bounded transactions, starts the children (a
// hidden `quickbench procs-worker` each, one worker.Worker per process),
// waits until every child's claim loop is up and refused on the pause, lets
// the lanes membership settle, resumes the task type and times the drain
// from that moment until the last job has completed. Then it stops the
// children with SIGTERM and reads their CPU time (user + system, from
// ProcessState after Wait) and the kv counts each prints on exit.
//
// The pause is what makes the start fair: without it the first child up
// would drain alone while the others are still starting, and the row would
// time process start-up instead of the queue.
//
// # Completion counting
//
// With Complete "with" (the default) each handler completes its job through
// worker.Job.CompleteWith, whose transaction also adds 1 to the run's
// counter key: the count is exact (a job completed twice would show as a
// count above the backlog), and the parent polls that one key. Every job
// then costs a commit of its own. With Complete "ack" handlers return nil
// and the worker's acker batches completions, as real handlers and the
// goroutine bench do; the parent follows the children's progress lines
// (worker.Stats.Completed, reported every ReportEvery) and checks the sum
// of their final counts, and that the queue holds no job, after the stop.
//
// # The job model
//
// The bench's: Concurrency handler slots per worker (8), job durations
// drawn from a distribution (exponential, mean 20 ms) with a seeded
// generator at fill time and carried in the payload, so every process count
// drains the same sequence; handlers sleep, as handlers waiting on I/O do.
// NoOp handlers return at once. There are no delayed or failing jobs: the
// row is a pure drain.
package procbench
