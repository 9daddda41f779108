package quick_test

import (
	"context"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// A zones claim whose commit was cut short with its outcome unknown (its
// context ended) says so, and hands back what it may have taken: the job
// is ready again with no attempt spent.
func TestZoneClaimCutShortReleasesWhatItMayHaveTaken(t *testing.T) {
	for name, f := range commitFaults {
		t.Run(name, func(t *testing.T) {
			e := newFaultEnv(t, f, quick.Options{})
			// The cut-short claim hands back what it took through the
			// lease operations: a Release must work.
			if _, err := e.truth.Enqueue(e.ctx, quick.NewJob{TaskType: "probe"}); err != nil {
				t.Fatal(err)
			}
			probe, err := e.truth.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "probe", Holder: "w", Lease: time.Minute})
			if err != nil || len(probe.Jobs) != 1 {
				t.Fatalf("probe claim = %+v, %v", probe, err)
			}
			if err := e.truth.Release(e.ctx, probe.Jobs[0]); err != nil {
				t.Fatalf("releasing a zones lease: %v", err)
			}
			if _, err := e.truth.Enqueue(e.ctx, quick.NewJob{TaskType: "email", MaxAttempts: 1}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(e.ctx)
			q := quickOverHook(t, e, func() { cancel() })
			_, err = q.Consumer().Claim(ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Lease: time.Minute})
			if !kv.IsMaybeCommitted(err) {
				t.Fatalf("claim cut short = %v, want a maybe-committed error", err)
			}
			c, err := e.truth.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w2", Lease: time.Minute})
			if err != nil || len(c.Jobs) != 1 || c.Jobs[0].Attempt != 1 {
				t.Fatalf("after the cut-short claim: %+v, %v; want the job ready with no attempt spent", c, err)
			}
		})
	}
}
