// Package bench is the harness behind `quickbench bench`: it runs one
// workload against several claim strategies on the same engine, with the
// same latencies, in one process, so that their ratios mean something.
//
// The strategies (variants) are:
//
//   - fdb-recipe-delete: FoundationDB's documented queue recipe
//     (documentation/sphinx/source/queues.rst): every consumer reads the
//     first key of one ordered range (a serializable read, limit 1) and
//     deletes it in the same transaction. There is no lease: a consumer that
//     dies after the dequeue loses the job.
//   - fdb-recipe-lease: the same head-of-queue read, but the job is leased as
//     quickfdb leases it (its schedule key moves to now + lease with a fresh
//     token) and completed afterwards, for parity with the others.
//   - quick-random-k: QuiCK as its followers implement it: a snapshot peek at
//     the first K vested jobs of the task type, with no lanes, and a random
//     pick among them, leased in one transaction.
//   - lanes: this project's claims: quick.Claim over the lanes lanes.Assign
//     gives each worker, Max sized to free capacity, acks batched through
//     quick.Ack.
//   - zones, zones-16: the zones layout (schema 2, issue 11): quick.ClaimZone
//     takes a lane from the task type's pointer index, Max sized to free
//     capacity, acks batched through quick.Ack. zones keeps the default
//     options (a zone starts with one lane and grows under backlog);
//     zones-16 gives every zone 16 lanes from the start.
//
// The first four run over quick's own lanes layout (docs/design.md): producers always
// enqueue with quick.Enqueue. The recipe and random-K variants open their
// queue with one lane, which gives the single vesting-time-ordered range
// those designs assume, and claim with the mirror of the layout in
// layout.go; lanes uses the quick package itself.
//
// Every figure comes from kv.WithCounters (one counter set per path:
// enqueue, claim, ack), so per-job costs are in kv.Stats units, which carry
// over from the embedded engine to a real cluster. Wall times on memkv are
// only as good as the latencies injected into it (memkv.FDBLatency).
package bench
