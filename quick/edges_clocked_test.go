package quick_test

import (
	"testing"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
)

// newClockedSizeEnv is newSizeEnv on a private memkv whose engine clock is
// the test's fake clock, for tests that move megabytes but are not about
// timeouts. A claim bounds its transaction with ClaimOptions.Timeout
// (default 2 s), which memkv measures on its engine clock; on the shared
// engine that is real time, and under load (-race, both cores busy) a
// claim dead-lettering 2 MB of records took longer and failed with 1031
// (TestClaimBoundsTheDeadLettersItWrites, 1 run in 6). On the test's clock
// no time passes inside a transaction, so the bound holds by construction
// and the test checks what it is about: bytes.
func newClockedSizeEnv(t testing.TB, opts quick.Options) *sizeEnv {
	t.Helper()
	clk := clock.NewFake(epoch)
	raw, space := fdbtest.OpenMem(t, memkv.Options{Clock: clk})
	return newSizeEnvOn(t, raw, space, clk, opts)
}
