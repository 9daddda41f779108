package quick_test

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// TestDeterministicIDKeeps74SeedBits: the same (time, seed) gives the same
// ID, and so do seeds that differ only in the 6 bits the version and
// variant take; every other seed bit changes the ID.
func TestDeterministicIDKeeps74SeedBits(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	var seed [10]byte
	for i := range seed {
		seed[i] = byte(0x11 * (i + 1))
	}
	base := quick.DeterministicID(at, seed)
	if again := quick.DeterministicID(at, seed); again != base {
		t.Fatalf("same (t, seed) gave %v then %v", base, again)
	}
	if !base.Time().Equal(at) {
		t.Fatalf("Time() = %v, want %v", base.Time(), at)
	}
	for byteIdx := range seed {
		for bit := range 8 {
			s := seed
			s[byteIdx] ^= 1 << bit
			masked := (byteIdx == 0 && bit >= 4) || (byteIdx == 2 && bit >= 6)
			if got := quick.DeterministicID(at, s); (got == base) != masked {
				t.Errorf("seed byte %d bit %d flipped: same ID = %v, want %v", byteIdx, bit, got == base, masked)
			}
		}
	}
}
