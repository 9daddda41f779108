package quick

import (
	"context"
	"errors"
)

// ClaimZone leases up to opts.Max vested jobs of a task type from the zones
// layout: it takes a lane from the pointer index (or continues on
// opts.Pointer), takes that lane's vested jobs with per-job leases, and
// hands the lane back with its next vesting time unless opts.Keep holds it.
// STUB: replaced by the zones-claim branch.
func (q *Queue) ClaimZone(ctx context.Context, opts ZoneClaimOptions) (ZoneClaimed, error) {
	return ZoneClaimed{}, errors.New("quick: ClaimZone is not built yet")
}
