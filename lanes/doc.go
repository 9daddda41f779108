// Package lanes shards a task type's jobs into lanes and shares the lanes out
// among the workers that are alive, with no coordinator and no leader.
//
// It is internal: it is the worker runtime's machinery (package worker
// runs a Tracker per task type), and the CLI and the web console read its
// registry. Nothing in it is a promise to users.
//
// # Why lanes
//
// QuiCK has every worker scan the vested jobs and pick a random subset, so
// that two workers rarely reach for the same job. With few workers that coin
// has no memory: a job can be skipped round after round. Instead a job's lane
// is a hash of its key (Of), every lane is watched by a few workers, and a
// worker only claims jobs of its own lanes. Claiming a job moves its vesting
// time, which changes its key and so its lane, so no job stays stuck behind
// one slow or unlucky worker.
//
// # Membership
//
// Every worker of a task type keeps a Tracker. The Tracker writes a
// heartbeat into the Registry's subspace each HeartbeatPeriod and, in the
// same transaction, reads the members of its task type (at most MaxMembers;
// snapshot reads,
// so the heartbeat transaction never conflicts). Each Tracker keeps its own
// view of the members and computes its own lanes from it with rendezvous
// hashing under a load bound (Assign), so shares are equal to within a lane. Workers whose views agree agree on the lanes. Views
// differ for about one period after a join or a Leave, and for up to
// Timeout after a death (the dead worker's lanes wait for the survivors to
// notice). A worker that has seen a member only once, and so cannot yet
// tell whether it beats, watches its lanes both with and without it, so a
// view lagging behind errs towards watching a lane twice rather than not at
// all. Double watching is harmless: a claim is a transaction, not a lock.
//
// # Liveness
//
// Liveness is judged by observing change, never by comparing clocks: a
// member is live while the observer has seen its heartbeat value change
// within the last Timeout, measured on the observer's own clock. A member
// seen for the first time counts as just changed. Clock skew between
// workers therefore cannot make a live worker look dead, or a dead one
// live. Members dead for ExpireAfter are cleared by whichever observer
// notices first.
//
// The members' reported wall clocks are used for one thing only: judging
// each worker's clock against a reference the members share (skew.go), so
// that a worker whose clock is too far off for leases, which are wall-clock
// deadlines, to mean anything stands by (Tracker.Standby): it keeps beating,
// flagged, and takes no lanes, and the others share its lanes. Clocks are
// compared through read versions (one ruler for every client of the
// cluster) and bracketed readings; the reference is the median of a
// majority of agreeing clocks, or without one the most senior active
// member's, so two workers never stop each other.
//
// # Key layout
//
// Under the subspace S given to NewRegistry, per task type T and worker W:
//
//	S.Pack(T, W, "hb")   heartbeat: 33 bytes (codec.go): counter, wall clock
//	                     ms, read version, seniority, standby flag
//	S.Pack(T, W, "info") info: versioned binary record (host, lanes watched)
//
// A member's keys are adjacent, so Leave and expiry are one range clear, and
// one range read of S.Sub(T) returns the whole membership.
//
// The heartbeat is one blind Set per beat, not an atomic Add: an Add can
// only bump the counter, and the wall clock must change with it, which
// would take a second mutation. A Set that reads nothing conflicts with
// nothing, exactly like an Add, so a beat (Set + snapshot range read) can
// never fail with not_committed. The counter is kept by the worker and, on
// Join, continued from the stored value, so a restarted worker's beats
// still read as changes. The info key changes only with the worker's lanes.
//
// Per beat, in steady state: one transaction, one read version, one range
// read of 2 keys per member (at most 2 × MaxMembers keys), one mutation (a
// 33-byte value), one commit.
package lanes
