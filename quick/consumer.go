package quick

import (
	"errors"
	"time"
)

// Consumer is the claim protocol: what a worker runtime calls to take jobs
// and the lanes they come from (package worker is one such runtime; the
// package documentation, "Writing a consumer", says how to write another).
// Applications that enqueue, inspect and control jobs need none of it. The
// job leases it hands out are ended and renewed with the Queue's lease
// operations (Complete, Fail, Snooze, Release, DeadLetter, Ack, Extend,
// ExtendMany, Checkpoint), which handlers use too.
type Consumer struct{ q *Queue }

// Consumer returns the queue's claim protocol.
func (q *Queue) Consumer() *Consumer { return &q.consumer }

// ErrLaneLost is wrapped when a worker's lease on a lane (LaneLease) is
// gone: it lapsed and another worker took the lane.
var ErrLaneLost = errors.New("quick: lane lease lost")

// IsLaneLost reports whether err means a lane lease was lost.
func IsLaneLost(err error) bool { return errors.Is(err, ErrLaneLost) }

// LaneLease is a worker's lease on one hash lane of one zone, taken from the
// task type's pointer index by a claim (or kept by one, ClaimOptions.Keep).
// It is a value; operations that renew it return the new one. While it is
// held no other claim takes jobs from the lane; it ends when the holder
// hands the lane back (a claim without Keep, ReleaseLane, HandBack) or when
// it lapses (Options.LaneLeaseTime after it was taken or renewed).
type LaneLease struct {
	TaskType  string
	ItemSpace string
	Priority  Priority
	Lane      int
	// Deadline is when the lease lapses unless renewed or handed back.
	Deadline time.Time
	Holder   string
	// Lapsed is set when the lane was taken over from a holder whose lease
	// lapsed without handing it back. In short-job mode the jobs that holder
	// was running may run again: they are claimed with per-job leases, so
	// their attempts are counted, the lapsed holder's runs included (the
	// lane's hand-out mark, countLapsedShort).
	Lapsed bool
	// Short is set when the lane is leased in short-job mode.
	Short bool

	lane   laneRef
	token  uint64
	cursor []byte // short-job mode: the last job key handed out
	// lapsedShort is the token of the short-job lease this one took over
	// (Lapsed, and the lapsed holder handed jobs out without writing
	// them): the takeover counts their runs (countLapsedShort).
	lapsedShort uint64
	// unsaved is set between acquire and the end of the claim's
	// transaction: the lease is not written yet, and the pointer is still
	// at fromMs. A claim that hands the lane back in the same transaction
	// so writes the lane state and the pointer once, not twice (saveHold
	// writes the lease when the claim keeps the lane).
	unsaved bool
	fromMs  int64
}

// ClaimOptions shape one claim.
type ClaimOptions struct {
	TaskType string
	// Holder names the worker taking the leases; required.
	Holder string
	// Max is the most jobs to claim; default 1.
	Max int
	// Lease is how long the claimed jobs are held before they vest again;
	// at least MinLease, at most the queue's MaxLease. Default 30 s. (In
	// short-job mode the jobs are held by the lane lease instead.)
	Lease time.Duration
	// MaxBytes caps the payload and checkpoint bytes one claim takes;
	// default 4 MB. At least one job is always taken.
	MaxBytes int
	// Timeout bounds the claim transaction, well under FDB's 5 s; default 2 s.
	Timeout time.Duration
	// BatchPriority runs the claim at FDB's batch priority, so a loaded
	// cluster sheds queue work before the application's own transactions.
	BatchPriority bool
	// Tag is an FDB throttling tag for the claim (at most MaxTagLen bytes).
	Tag string
	// Lane continues on a lane this worker holds (from an earlier
	// Claimed.Lane); nil takes a lane from the pointer index.
	Lane *LaneLease
	// Peek is how many pointers of each priority a claim reads to pick
	// one vested at random; default 8.
	Peek int
	// PeekHead reads the Peek pointers at the head of the index, which
	// every claimer reads alike, instead of starting at a random place in
	// the oldest vested second: the choice before the random start, kept
	// to compare (quickbench scale); concurrent claims collide more.
	PeekHead bool
	// Keep keeps the lane leased after the claim when it still has vested
	// jobs, so that the next claim continues on it (Claimed.Lane);
	// without it the claim hands the lane back in its own transaction.
	Keep bool
	// Scan, with a claim from the pointer index (no Lane, no From), also
	// returns up to Scan other vested lanes the claim's index read saw
	// (Claimed.Candidates), at most one per zone and none of the claimed
	// lane's zone: a consumer process's one scanner hands them to its
	// other claim goroutines, which claim them with From instead of each
	// reading the index (scan.go).
	Scan int
	// Skip, with Scan, names lanes the scan must neither take nor return
	// as candidates: those the consumer has handed to its other claim
	// goroutines (candidates of earlier scans) and not yet claimed, which
	// the scan would otherwise race them for. At most maxSkip are used.
	Skip []LaneCandidate
	// From claims the lane a scan saw (Claimed.Candidates) instead of
	// taking one from the pointer index. When the lane is no longer vested
	// there (another claim leased it, or it moved), the claim takes
	// nothing and says so (Claimed.Missed), without an error.
	From *LaneCandidate
	// Acks are acks of the caller's finished runs to commit in the claim's
	// transaction: a worker continuing on a lane it keeps acks the jobs it
	// finished and claims the next ones in one commit (claimacks.go). Each
	// must satisfy AckJoinsClaim; at most MaxClaimAcks of them, within
	// about 256 KB of mutations. A claim that fails applies none of them.
	Acks []Ack

	// capped is set by the claim when its tenant's limits lowered Max
	// (limitgate.go).
	capped bool
	gate   *gate
}

// Claimed is the outcome of a claim.
type Claimed struct {
	Jobs []Lease
	// NextVest, when no job was taken, is when to look again: the vesting
	// time of the earliest pointer seen (a worker with nothing to do can
	// sleep until then, since a vesting job or an expiring lease writes
	// nothing that could wake it), or now when another look may find work.
	// Zero when the index holds no pointer.
	NextVest time.Time
	// More is set when the lane still has vested jobs: come back at once.
	More bool
	// DeadLettered counts jobs moved to the dead letters instead of being
	// claimed: their attempts had all been spent by holders that vanished,
	// or their key or value did not decode (quarantined).
	DeadLettered int
	// Lane is the lane still leased (Keep was set and the lane has more
	// vested jobs); nil when the lane was handed back or none was vested.
	Lane *LaneLease
	// Candidates are other vested lanes the claim's index read saw
	// (ClaimOptions.Scan), for claims with From.
	Candidates []LaneCandidate
	// Missed is set when a claim with From found its lane no longer vested
	// at the candidate's place: claim another.
	Missed bool
	// Acked holds one result per ClaimOptions.Acks, as Ack returns them: a
	// lost lease fails only its own entry (AckResult.Err).
	Acked []AckResult

	deadIDs []ID
}
