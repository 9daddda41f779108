// Package bench is the harness behind `quickbench bench`: it runs one
// workload against several claim strategies on the same engine, with the
// same latencies, in one process, so that their ratios mean something.
//
// The strategies (variants) are zones and zones-16: quick.Consumer.Claim
// takes a lane from the task type's pointer index, Max sized to free
// capacity, acks batched through quick.Ack. zones keeps the default options
// (a zone starts with one lane and grows under backlog); zones-16 gives
// every zone 16 lanes from the start; the -keep variants keep a lane for
// several claims, as the worker runtime does.
//
// The comparison strategies of earlier runs (FoundationDB's queue recipe,
// QuiCK's random-K peek, and this project's schema-1 lanes) claimed from
// schema 1's single ordered range, which quick no longer writes; they were
// removed with it (issue 21). The numbers that decided against them are
// in docs/design.md ("The alternative weighed", "Before the lanes").
//
// Every figure comes from kv.WithCounters (one counter set per path:
// enqueue, claim, ack), so per-job costs are in kv.Stats units, which carry
// over from the embedded engine to a real cluster. Wall times on memkv are
// only as good as the latencies injected into it (memkv.FDBLatency).
package bench
