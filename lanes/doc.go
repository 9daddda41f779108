// Package lanes holds the policy of the hash lanes inside a zone.
//
// A zone is the queue of one (tenant, task type) (package quick,
// docs/design.md "Two levels"). Its jobs are spread over a few hash lanes
// so that several workers can drain one busy zone at once: each lane is
// leased by one worker at a time from the task type's pointer index, and
// has its own entry there. This package is what decides, with no storage
// and no clock of its own:
//
//   - the lane of a job: OfID, a hash of its ID modulo the zone's lane
//     count, fixed for the job's life (it is part of the on-disk format);
//   - where a zone's lanes sit in the pointer index: Spread, which places
//     lane i of a zone away from lane i-1 in the hash space, so that
//     workers peeking at random places pick different lanes of a hot zone;
//   - the lane count: a zone starts with quick.Options.ZoneLanes lanes (1
//     by default) and Grow doubles it, up to a cap and at most Max, when a
//     claim finds the zone Backlogged, or, for a short-job zone, when its
//     enqueues conflict (up to ContendedMax);
//   - the split of a deep lane: a claim that finds a backlogged lane moves
//     a chunk (SplitChunk) of its vested jobs to SplitWays other lanes.
//
// Of is the plain hash the rest of the module uses to spread anything over
// n slots (the workers' clock samples, for one).
//
// "Lane" means one thing in this module: a hash lane inside a zone. The
// fleet-wide lane assignment of the removed schema-1 layout (membership
// heartbeats, rendezvous hashing, a tracker per task type) is gone (issue
// 21); the console and CLI list workers from package worker's presence
// records (worker.ListWorkers).
package lanes
