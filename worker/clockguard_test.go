package worker

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/tuple"
)

// A zones worker whose clock is far off the others' stands by through the
// bounded clock check (no registry), and the others do not.
func TestZonesClockSkewStandsBy(t *testing.T) {
	e := newClockedEnv(t, zonesOptions())
	mk := func(id string, off time.Duration) *Worker {
		cfg := Config{ID: id}
		if off != 0 {
			cfg.Clock = skewed{e.clk, off}
		}
		return e.newWorker(cfg, func(w *Worker) {
			if err := RegisterRaw(w, "skew", noopRaw, HandlerOptions{Lease: 30 * time.Second}); err != nil {
				t.Fatal(err)
			}
		})
	}
	a, b, c := mk("a", 0), mk("b", 0), mk("c", 20*time.Second)
	for _, w := range []*Worker{a, b, c} {
		e.start(w)
	}
	e.waitFor("the first clock rounds", func() bool {
		for _, w := range []*Worker{a, b, c} {
			if known, _ := w.zclock.state(); !known {
				return false
			}
		}
		return true
	})
	e.step(2*clockPeriods*time.Second, time.Second, a, b, c)
	if _, standby := c.zclock.state(); !standby {
		off, bound, n := c.zclock.Offset()
		t.Fatalf("skewed worker active: offset %v bound %v samples %d", off, bound, n)
	}
	if off, _, _ := c.zclock.Offset(); off < 19*time.Second || off > 21*time.Second {
		t.Fatalf("skewed worker's offset %v, want about 20s", off)
	}
	if got := c.byType["skew"].refuse(); got != refuseSkew {
		t.Fatalf("refusal %q, want the clock skew", got)
	}
	for _, w := range []*Worker{a, b} {
		if _, standby := w.zclock.state(); standby {
			t.Fatalf("worker %s on the reference clock stands by", w.ID())
		}
		if got := w.byType["skew"].refuse(); got != "" {
			t.Fatalf("worker %s refuses: %q", w.ID(), got)
		}
	}
}

func TestJudgeClock(t *testing.T) {
	const limit = time.Second
	self := clockCand{id: "self", since: 5}
	cases := []struct {
		name    string
		peers   []clockCand
		prev    bool
		standby bool
	}{
		{"alone", nil, false, false},
		{"agrees", []clockCand{{id: "p", off: 100 * time.Millisecond, bound: 10 * time.Millisecond, since: 1}}, false, false},
		{"junior and off", []clockCand{{id: "p", off: 5 * time.Second, bound: 10 * time.Millisecond, since: 1}}, false, true},
		{"senior and off", []clockCand{{id: "p", off: 5 * time.Second, bound: 10 * time.Millisecond, since: 9}}, false, false},
		{"outvoted", []clockCand{
			{id: "p", off: 5 * time.Second, bound: 10 * time.Millisecond, since: 9},
			{id: "q", off: 5*time.Second + 50*time.Millisecond, bound: 10 * time.Millisecond, since: 9},
		}, false, true},
		{"too imprecise keeps the standing", []clockCand{{id: "p", off: 900 * time.Millisecond, bound: 800 * time.Millisecond, since: 1}}, true, true},
		// The reference is the middle of the spread: p 1.6 s ahead puts it
		// 0.8 s away, within the limit but not with a quarter to spare.
		{"comes back with margin only", []clockCand{{id: "p", off: 1600 * time.Millisecond, bound: 10 * time.Millisecond, since: 1}}, true, true},
		{"joins within the limit of the middle", []clockCand{{id: "p", off: 1600 * time.Millisecond, bound: 10 * time.Millisecond, since: 1}}, false, false},
		{"junior, a fleet spread over twice the limit", []clockCand{{id: "p", off: -1900 * time.Millisecond, bound: 10 * time.Millisecond, since: 1}}, false, false},
		{"comes back", []clockCand{{id: "p", off: 500 * time.Millisecond, bound: 10 * time.Millisecond, since: 1}}, true, false},
	}
	for _, c := range cases {
		got, _, _ := judgeClock(append([]clockCand{self}, c.peers...), limit, c.prev)
		if got != c.standby {
			t.Errorf("%s: standby %v, want %v", c.name, got, c.standby)
		}
	}
}

func FuzzDecodeClockSample(f *testing.F) {
	f.Add(clockSample{WallMs: 1, Version: 2, Since: 3, Standby: true, ID: "w"}.encode())
	f.Add(tuple.Tuple{int64(1), "x"}.Pack())
	f.Add([]byte{0xff, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeClockSample(b)
		if err != nil {
			return
		}
		back, err := decodeClockSample(s.encode())
		if err != nil || back != s {
			t.Fatalf("round trip: %+v -> %+v, %v", s, back, err)
		}
	})
}
