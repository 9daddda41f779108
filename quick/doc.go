// Package quick is a QuiCK-style job queue over FoundationDB.
//
// A job is a schedule key ordered by its vesting time (when it may run),
// hashed into one of N lanes per task type, plus a record keyed by its ID
// that holds the payload. A worker scans the vested range of the lanes it
// watches and claims a job by moving its schedule key into the future: the
// new vesting time is the lease's deadline. If the worker dies, the job vests
// again and another worker takes it. Because a claim changes the key, it
// also changes the job's lane, so no job is stuck behind an unlucky lane.
//
// Every operation is one FDB transaction, and the ones a user needs inside
// their own transaction come in a Tx form: EnqueueTx commits jobs with the
// caller's writes, AckTx completes a job with the writes its handler made.
// Time comes from an injectable clock (package clock). The key layout and
// the cost of each operation in FDB reads and writes are in docs/design.md.
//
// Beyond the job's life: Wait blocks until a waitable job (NewJob.Waitable,
// Options.WaitableTypes) finishes, on a kv watch rather than by polling, and
// Outcome tells completed, dead-lettered and cancelled apart; Pause and
// Resume stop and restart the worker runtime's claims of a task type;
// RunNow runs a scheduled job now; CancelMatching and RequeueMatching act on
// the jobs a Filter selects, in bounded batches.
package quick
