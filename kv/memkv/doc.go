// Package memkv is quickfdb's embedded storage engine: a pure-Go, in-memory
// implementation of the kv contract with FoundationDB's transaction semantics.
// Every test, benchmark and the demo run on it, so it reproduces the FDB
// behaviour the queue depends on rather than an idealised store:
//
//   - Multi-version reads. Each batch of commits (below) publishes an
//     immutable copy-on-write snapshot (tidwall/btree Copy), and a
//     transaction reads the snapshot of its read version. The read version is taken lazily, at the first read
//     that needs storage, at GetReadVersion, or at commit.
//   - One resolver. Commits are serialized; a commit fails with 1020 exactly
//     when a transaction that committed after its read version wrote into one
//     of its read-conflict ranges. Commits that arrive while others are being
//     resolved are batched, as FDB's commit proxies batch them: resolved one
//     by one in arrival order, each at its own version, under one
//     acquisition of the commit lock and one published snapshot, and each
//     Commit returns once its batch is visible (commit.go). Committed write ranges are kept, with their
//     versions, in an interval structure (conflicts.go) pruned beyond the MVCC
//     window.
//   - Read-your-writes as FDB's RYW layer does it, including atomic operations,
//     the read-conflict ranges it adds (reads answered from the transaction's
//     own independent writes add none) and the unreadable ranges of
//     versionstamped operations (1036).
//   - The 5-second window (Options.MVCCWindow) measured on the engine clock
//     (Options.Clock), FDB's size limits, transaction options, OnError
//     backoff, cancellation, watches and versionstamps.
//   - Optional latency injection (Options.Latency), seeded, so code can be
//     measured under FDB-like round trips. Latency and backoff run on
//     Options.Wait (real time by default); with a clock.Fake they take no
//     real time and tests assert their durations exactly.
//
// Where FDB's own client behaviour and the kv contract's documentation differ,
// the package follows FDB's source (release-7.3) and says so at the site.
package memkv
