package worker

import (
	"time"

	"github.com/quickfdb/quickfdb/internal/testhooks"
)

func init() {
	testhooks.KillWorker = func(w any) { w.(*Worker).kill() }
	testhooks.ClaimedAt = func(job any) time.Time { return job.(interface{ claimedAt() time.Time }).claimedAt() }
}

// claimedAt is when this worker claimed the job (testhooks.ClaimedAt).
func (j *Job[T]) claimedAt() time.Time { return j.st.claimed }
