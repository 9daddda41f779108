package worker

import "github.com/quickfdb/quickfdb/internal/mutant"

// clockRefusal says whether r's zones claims must stand by because this
// worker's clock is off the task type's time reference (lanes/skew.go).
//
// The estimate comes from the lanes registry, which a zones runner joins
// only while schema-1 jobs are left (zlegacy.go): its heartbeat reads the
// whole membership, which the zones layout must not pay for ever. Without
// it, a zones claim cannot take a lane or a job from a live holder on a
// skewed clock alone: every lease it could steal is guarded by a deadline
// its holder renews with a third of the lease left (docs/design.md "Worker
// in the zones layout" states the margin and what is left to do).
func (w *Worker) clockRefusal(r *runner) string {
	if on, _ := r.legacy.get(); on && r.tracker.Standby() && !mutant.On("worker.skew-standby") {
		return refuseSkew
	}
	return ""
}
