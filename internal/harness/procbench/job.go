package procbench

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/quickfdb/quickfdb/internal/harness/bench"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// TaskType is the drain's task type.
const TaskType = "quickbench.procs"

// durationBytes is the head of a payload: the job's duration in
// nanoseconds, big-endian. The rest is padding up to Config.Payload.
const durationBytes = 8

// one is the little-endian 1 FDB's atomic add takes.
var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}

// payloads draws n payloads of size bytes, seeded: every process count of
// a run drains the same sequence of durations.
func payloads(n, size int, d bench.Dist, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([][]byte, n)
	for i := range out {
		p := make([]byte, size)
		binary.BigEndian.PutUint64(p, uint64(d.Draw(rng)))
		out[i] = p
	}
	return out
}

func payloadDuration(p []byte) time.Duration {
	if len(p) < durationBytes {
		return 0
	}
	return time.Duration(binary.BigEndian.Uint64(p))
}

// handler runs the drain's jobs: sleeps for the payload's duration (unless
// noOp) and completes, through CompleteWith with the counter add when
// counter is set, else by returning nil (the worker's batched ack).
type handler struct {
	noOp    bool
	counter []byte
}

func (h handler) run(ctx context.Context, job *worker.RawJob) error {
	if d := payloadDuration(job.Args); !h.noOp && d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
	}
	if h.counter == nil {
		return nil
	}
	// The add commits with the completion or not at all: the counter is
	// the number of completions, exactly. Atomic adds take no read
	// conflict, so every worker adding to one key does not conflict.
	return job.CompleteWith(ctx, func(tr kv.Transaction) error {
		tr.Add(h.counter, one)
		return nil
	})
}

// newJobs wraps payloads as jobs of TaskType, vested now.
func newJobs(ps [][]byte) []quick.NewJob {
	out := make([]quick.NewJob, len(ps))
	for i, p := range ps {
		out[i] = quick.NewJob{TaskType: TaskType, Payload: p}
	}
	return out
}
