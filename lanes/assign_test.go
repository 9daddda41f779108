package lanes

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func workers(w int) []string {
	out := make([]string, w)
	for i := range out {
		out[i] = fmt.Sprintf("worker-%d", i)
	}
	return out
}

// watchers maps each lane to the members that watch it, by Assign.
func watchers(n int, members []string, r int) [][]string {
	out := make([][]string, n)
	for _, m := range members {
		for _, l := range Assign(n, members, m, r) {
			out[l] = append(out[l], m)
		}
	}
	return out
}

// The rendezvous weight is shared by every worker; pin it.
func TestWeightVectors(t *testing.T) {
	var h hasher
	for _, v := range []struct {
		lane   int
		member string
		want   uint64
	}{
		{0, "w1", 0x237e7f8f7487a021},
		{1, "w1", 0xf7cd03534c0cd49f},
		{5, "worker-a", 0x21012217c92a0288},
		{1023, "host-7:1234", 0xbdf3464cc39258ea},
	} {
		if got := h.weight(v.lane, v.member); got != v.want {
			t.Errorf("weight(%d, %q) = %#x, want %#x", v.lane, v.member, got, v.want)
		}
	}
	ms := []string{"a", "b", "c"}
	for self, want := range map[string][]int{
		"a": {1, 3, 5, 8, 15}, "b": {0, 6, 10}, "c": {2, 4, 7, 9, 11, 12, 13, 14},
	} {
		if got := Assign(16, ms, self, 1); !slices.Equal(got, want) {
			t.Errorf("Assign(16, %v, %q, 1) = %v, want %v", ms, self, got, want)
		}
	}
}

// Every lane is watched by exactly min(R, W) members: at least one always,
// at least R when there are enough members, and never more than R.
func TestAssignCoverage(t *testing.T) {
	for _, n := range []int{1, 7, 64, 256} {
		for _, w := range []int{1, 2, 3, 5, 16} {
			for _, r := range []int{1, 2, 3} {
				ms := workers(w)
				for l, ws := range watchers(n, ms, r) {
					if want := min(r, w); len(ws) != want {
						t.Fatalf("n=%d w=%d r=%d: lane %d watched by %v, want %d watchers", n, w, r, l, ws, want)
					}
					if own := Owners(l, ms, r); !sameSet(own, ws) {
						t.Fatalf("Owners(%d) = %v, Assign gives %v", l, own, ws)
					}
				}
			}
		}
	}
}

// Each of W workers gets about n·R/W lanes. A worker's count is binomial
// (n, R/W); the bound is 5 standard deviations, deterministic since the
// IDs are fixed.
func TestAssignBalance(t *testing.T) {
	for _, c := range []struct{ n, w, r int }{{256, 4, 1}, {1024, 10, 1}, {1024, 10, 2}, {512, 32, 3}} {
		ms := workers(c.w)
		p := float64(c.r) / float64(c.w)
		mean := float64(c.n) * p
		sd := math.Sqrt(float64(c.n) * p * (1 - p))
		for _, m := range ms {
			got := float64(len(Assign(c.n, ms, m, c.r)))
			if math.Abs(got-mean) > 5*sd {
				t.Errorf("n=%d w=%d r=%d: %s has %v lanes, want %.0f ± %.0f", c.n, c.w, c.r, m, got, mean, 5*sd)
			}
		}
	}
}

// When a member leaves, only the lanes it watched change hands; every other
// worker keeps all it had. When it joins, it only takes lanes, and the
// others only lose lanes (to it).
func TestAssignMinimalMovement(t *testing.T) {
	const n = 512
	for _, r := range []int{1, 2} {
		all := workers(8)
		gone := all[3]
		rest := slices.Delete(slices.Clone(all), 3, 4)
		before := watchers(n, all, r)
		after := watchers(n, rest, r)
		moved := 0
		for l := range n {
			if slices.Contains(before[l], gone) {
				moved++
				// The survivors of the lane keep it.
				for _, m := range before[l] {
					if m != gone && !slices.Contains(after[l], m) {
						t.Errorf("r=%d lane %d: %s lost it though only %s left", r, l, m, gone)
					}
				}
				continue
			}
			if !sameSet(before[l], after[l]) {
				t.Errorf("r=%d lane %d: watchers %v -> %v though %s did not watch it", r, l, before[l], after[l], gone)
			}
		}
		if moved == 0 {
			t.Fatalf("r=%d: %s watched nothing", r, gone)
		}
		// Joining is the same comparison read backwards.
		for _, m := range rest {
			got, had := Assign(n, all, m, r), Assign(n, rest, m, r)
			for _, l := range got {
				if !slices.Contains(had, l) {
					t.Errorf("r=%d: %s gained lane %d when %s joined", r, m, l, gone)
				}
			}
		}
	}
}

// The result depends on the member set only: order, duplicates and whether
// self is listed do not matter.
func TestAssignDeterministic(t *testing.T) {
	ms := workers(6)
	want := Assign(100, ms, ms[2], 2)
	shuffled := []string{ms[5], ms[0], ms[3], ms[1], ms[4], ms[0], ms[5]}
	if got := Assign(100, shuffled, ms[2], 2); !slices.Equal(got, want) {
		t.Errorf("shuffled, duplicated, self missing: %v, want %v", got, want)
	}
	if got := Assign(100, append(shuffled, ms[2], ""), ms[2], 2); !slices.Equal(got, want) {
		t.Errorf("self listed: %v, want %v", got, want)
	}
}

func TestAssignEdges(t *testing.T) {
	if got := Assign(0, nil, "a", 1); got != nil {
		t.Errorf("no lanes: %v", got)
	}
	if got := Assign(5, nil, "a", 1); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("alone: %v, want every lane", got)
	}
	if got := Assign(5, []string{"b"}, "a", 0); len(got) == 5 {
		t.Errorf("replicas 0 should count as 1, got every lane with two members")
	}
	if got := Assign(5, []string{"b", "c"}, "a", 3); len(got) != 5 {
		t.Errorf("replicas >= members: %v, want every lane", got)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func BenchmarkAssign(b *testing.B) {
	ms := workers(32)
	for b.Loop() {
		Assign(1024, ms, ms[7], 2)
	}
}
