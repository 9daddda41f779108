package quick

import (
	"testing"
	"time"
)

// A short-job hand-out leased when a move fences its lane must not run at
// the destination while its old holder's lane lease still holds, as a
// per-job lease's copy does not (it vests at the lease's deadline). The
// hand-out lives in the lane's lease, not in the job's key, so the fence
// keeps the displaced lease's deadline in the lane state it writes
// (HeldMs) and the copy vests the lane's jobs no earlier
// (quick.move-short-held breaks it).
func TestMoveShortHandOutWaitsForItsOldLaneLease(t *testing.T) {
	src, dst, r, ids, held := shortMoveSetup(t)
	if _, err := src.MoveTenant(r.ctx, "acme", dst, MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(time.Second) // well within the old lane lease
	heldAt := map[ID]bool{}
	for _, l := range held {
		heldAt[l.ID] = true // handed out at the source: runs once more at the destination
	}
	for range 10 {
		for _, l := range r.claim(dst, 50) {
			if heldAt[l.ID] {
				t.Errorf("job %s handed out at the source runs at the destination %v after the move began, within its old holder's lane lease", l.ID, time.Second)
			}
			r.complete(dst, l)
		}
	}
	// Once the old lane lease has lapsed, the held jobs run at the
	// destination: none is lost.
	r.drain(dst)
	if twice := r.check(ids); twice != len(held) {
		t.Errorf("%d jobs ran twice; want the %d handed out at the fence", twice, len(held))
	}
}
