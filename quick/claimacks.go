package quick

import (
	"fmt"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// Acks joined to a claim (ClaimOptions.Acks; docs/design.md, "Acks in the
// claim's commit"). A worker continuing on a lane it keeps claims again as
// soon as its jobs are started; the acks of the jobs that finished since
// then go into that claim's transaction instead of a commit of their own,
// so a drain pays one commit for a round of acks and the next claim.
//
// Only acks that write nothing the claim writes join: completions and
// cancellations of jobs held with per-job leases outside a tenant's
// concurrency limit. They clear the job's key (and its blob, checkpoint,
// unique, index keys, and write its outcome or finished record), all keys
// of the job alone. A fail, snooze or release moves the job within its
// lane and covers the lane's pointer, which a claim holding that lane
// writes too; a short-job ack reads the lane state a continuing claim
// renews; a limited tenant's ack frees a slot in the count the claim's gate
// writes. Those stay with the acker's own commits.
//
// Each joined ack is checked as Ack checks it (zackTx): its key must still
// hold its lease's token, or the ack fails alone with a lost lease and
// writes nothing; a retry after an unknown commit recognises its own
// earlier commit (zackApplied). A claim that returns an error applied none
// of its acks; one whose commit is unknown may have applied them all.
//
// Keys: those of zackTx for each ack (the job key read serializably; the
// keys zfinishTx clears and writes), besides the claim's.

// MaxClaimAcks is how many acks one claim carries at most.
const MaxClaimAcks = 64

// claimAckBytes bounds the mutation bytes of a claim's acks (zackCost),
// besides the claim's own budget (zclaimTxBytes): both stay far under
// FDB's 10 MB.
const claimAckBytes = 256 << 10

// AckJoinsClaim reports whether a may go into a claim's transaction
// (ClaimOptions.Acks): a completion or cancellation of a job held with a
// per-job lease whose tenant has no concurrency limit.
func AckJoinsClaim(a Ack) bool {
	zl := a.Lease.zl
	if zl == nil || zl.ptr != nil || zl.slot {
		return false
	}
	return a.Kind == AckComplete || a.Kind == AckCancel
}

// ClaimAckCost is what a counts against a claim's ack budget
// (ClaimAckBudget); a claim's acks must fit in it together.
func (c *Consumer) ClaimAckCost(a Ack) int {
	if a.Lease.zl == nil {
		return 0
	}
	return zackCost(c.q.plan([]Ack{a})[0])
}

// ClaimAckBudget is the byte budget of a claim's acks (ClaimAckCost).
const ClaimAckBudget = claimAckBytes

// checkClaimAcks checks ClaimOptions.Acks: each joinable and well formed,
// within the count and the bytes.
func (q *Queue) checkClaimAcks(o ClaimOptions) error {
	if len(o.Acks) == 0 {
		return nil
	}
	if len(o.Acks) > MaxClaimAcks {
		return fmt.Errorf("%w: %d acks in a claim, at most %d", ErrInvalidOption, len(o.Acks), MaxClaimAcks)
	}
	n := 0
	for i, a := range o.Acks {
		if err := q.checkAck(a); err != nil {
			return fmt.Errorf("ack %d: %w", i, err)
		}
		if !AckJoinsClaim(a) {
			return fmt.Errorf("%w: ack %d cannot join a claim (AckJoinsClaim)", ErrInvalidOption, i)
		}
		if a.Lease.TaskType != o.TaskType {
			return fmt.Errorf("%w: ack %d is of task type %q, the claim of %q", ErrInvalidOption, i, a.Lease.TaskType, o.TaskType)
		}
		n += q.Consumer().ClaimAckCost(a)
	}
	if n > claimAckBytes {
		return fmt.Errorf("%w: the claim's acks write about %d bytes, over %d", ErrInvalidOption, n, claimAckBytes)
	}
	return nil
}

// claimAcks applies a claim's planned acks in tr. prev, after an attempt
// that may have committed, holds that attempt's results (nil otherwise):
// an ack it applied and now finds lost may be its own commit.
func (q *Queue) claimAcks(tr kv.Transaction, planned []plannedAck, prev []AckResult) ([]AckResult, error) {
	if len(planned) == 0 {
		return nil, nil
	}
	var applied []bool
	if prev != nil {
		applied = make([]bool, len(prev))
		for i, r := range prev {
			applied[i] = r.Err == nil
		}
	}
	if mutant.On("quick.claim-acks-unchecked") {
		// Deliberate break (internal/mutant): every joined ack taken for
		// one an earlier attempt applied, so a lost lease whose key is
		// gone from its place passes for this claim's own commit.
		applied = make([]bool, len(planned))
		for i := range applied {
			applied[i] = true
		}
	}
	// zackTx writes where each ack's job went back into the plan; a
	// completion goes nowhere, so the plan is shared by the attempts.
	return q.zackTx(tr, planned, applied)
}
