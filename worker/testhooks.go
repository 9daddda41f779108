package worker

import (
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
)

func init() {
	testhooks.KillWorker = func(w any) { w.(*Worker).kill() }
	testhooks.ClaimedAt = func(job any) time.Time { return job.(interface{ claimedAt() time.Time }).claimedAt() }
	testhooks.StartedLost = func(job any) error { return job.(interface{ startedLost() error }).startedLost() }
}

// claimedAt is when this worker claimed the job (testhooks.ClaimedAt).
func (j *Job[T]) claimedAt() time.Time { return j.st.claimed }

// startedLost is why the job's lease was known lost when its handler
// started (testhooks.StartedLost).
func (j *Job[T]) startedLost() error { return j.st.startedLost }
