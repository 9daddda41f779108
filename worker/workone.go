package worker

import (
	"context"
	"fmt"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/quick"
)

func init() { testhook.WorkOne = workOne }

// workOne runs the handler w has registered for l's task type on l, in the
// calling goroutine, and acks its outcome directly: quicktest.Work's run of
// a handler with no claim loop, keeper or acker. The handler gets the same
// Job as under Run (Checkpoint, CompleteWith and DeadLetterWith work), its
// Timeout on the worker clock and panic recovery. w must not be running.
//
// It returns the ack it made (0 when none: the handler ended the job itself
// with CompleteWith or DeadLetterWith, or lost the lease), the ack's result
// (its Err is a lease lost at the ack), the handler's own return value, and
// an error if the ack failed.
func workOne(ctx context.Context, w *Worker, l quick.Lease) (quick.AckKind, quick.AckResult, error, error) {
	w.mu.Lock()
	r, started := w.byType[l.TaskType], w.started
	w.mu.Unlock()
	if r == nil {
		return 0, quick.AckResult{}, nil, fmt.Errorf("%w: no handler registered for %q", ErrInvalidConfig, l.TaskType)
	}
	if started {
		return 0, quick.AckResult{}, nil, fmt.Errorf("work %s: %w", l.TaskType, ErrStarted)
	}
	st := r.newState(l)
	st.ctx, st.cancel = context.WithCancelCause(ctx)
	defer st.cancel(context.Canceled)
	hctx := st.ctx
	if d := r.opts.Timeout; d > 0 {
		var cancel context.CancelFunc
		hctx, cancel = r.withTimeout(hctx, d)
		defer cancel()
	}
	herr := r.call(hctx, st)

	st.mu.Lock()
	defer st.mu.Unlock()
	if st.phase != phaseRunning {
		return 0, quick.AckResult{}, herr, nil
	}
	ack, lost := ackFor(st.lease, r.opts, herr)
	if lost {
		st.loseLocked(herr)
		return 0, quick.AckResult{}, herr, nil
	}
	res, err := w.q.Ack(ctx, ack)
	// Ack joins every lost lease into err next to the results; a failed
	// transaction leaves no result.
	if len(res) == 0 {
		return ack.Kind, quick.AckResult{}, herr, err
	}
	if res[0].Err != nil {
		// The job was cancelled or taken while the handler ran.
		st.loseLocked(res[0].Err)
		return ack.Kind, res[0], herr, nil
	}
	st.phase = phaseDone
	return ack.Kind, res[0], herr, nil
}
