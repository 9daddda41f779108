package quick

import (
	"context"
	"errors"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Short-job mode. STUB: replaced by the zones-lease branch.

// takeShort hands out up to opts.Max vested jobs of a lane held in
// short-job mode (p.Short, not p.Lapsed) without moving their keys: the
// lane lease is their lease. ClaimZone calls it in its transaction after
// acquiring or checking the lane, instead of taking per-job leases.
func (q *Queue) takeShort(tr kv.Transaction, opts ZoneClaimOptions, p *PointerLease, now time.Time, res *ZoneClaimed) error {
	return errors.New("quick: short-job mode is not built yet")
}

// ExtendPointer renews a held lane lease until now+d.
func (q *Queue) ExtendPointer(ctx context.Context, p PointerLease, d time.Duration) (PointerLease, error) {
	return p, errors.New("quick: ExtendPointer is not built yet")
}

// HandBack hands a lane held in short-job mode back, first moving the jobs
// still running (running, handed out under p) to leases of their own until
// now+lease, in the same transaction; it returns their new leases.
func (q *Queue) HandBack(ctx context.Context, p PointerLease, running []Lease, lease time.Duration) ([]Lease, error) {
	return nil, errors.New("quick: HandBack is not built yet")
}
