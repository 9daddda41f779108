package lanes

import (
	"fmt"
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
		// Plain rendezvous gave 5/3/8; the bound (6 each) gives 6/4/6.
		"a": {1, 3, 5, 8, 14, 15}, "b": {0, 6, 10, 13}, "c": {2, 4, 7, 9, 11, 12},
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
					if own := Owners(l, n, ms, r); !sameSet(own, ws) {
						t.Fatalf("Owners(%d) = %v, Assign gives %v", l, own, ws)
					}
				}
			}
		}
	}
}

// Each of W workers gets about n·R/W lanes: the bounded load caps every
// share at ceil(n·R/W) (one more where coverage needs it), and the shares
// add up to n·R, so none falls below n·R − (W−1)·cap.
func TestAssignBalance(t *testing.T) {
	for _, c := range []struct{ n, w, r int }{{16, 2, 1}, {16, 3, 1}, {256, 4, 1}, {1024, 10, 1}, {1024, 10, 2}, {512, 32, 3}, {7, 16, 1}} {
		ms := workers(c.w)
		capacity := (c.n*c.r + c.w - 1) / c.w
		floor := max(c.n*min(c.r, c.w)-(c.w-1)*(capacity+1), 0)
		total := 0
		for _, m := range ms {
			got := len(Assign(c.n, ms, m, c.r))
			total += got
			if got > capacity+1 || got < floor {
				t.Errorf("n=%d w=%d r=%d: %s has %d lanes, want %d..%d", c.n, c.w, c.r, m, got, floor, capacity+1)
			}
		}
		if total != c.n*min(c.r, c.w) {
			t.Errorf("n=%d w=%d r=%d: %d lane slots assigned, want %d", c.n, c.w, c.r, total, c.n*min(c.r, c.w))
		}
	}
}

// When a member leaves, its lanes change hands, and so may a few others
// that the new bound lets overflow; far fewer than a modulo assignment
// would move (nearly all). Joining is the same comparison read backwards.
func TestAssignBoundedMovement(t *testing.T) {
	const n = 512
	for _, r := range []int{1, 2} {
		all := workers(8)
		gone := all[3]
		rest := slices.Delete(slices.Clone(all), 3, 4)
		before := watchers(n, all, r)
		after := watchers(n, rest, r)
		held, others := 0, 0
		for l := range n {
			if slices.Contains(before[l], gone) {
				held++
				continue
			}
			if !sameSet(before[l], after[l]) {
				others++
			}
		}
		if held == 0 {
			t.Fatalf("r=%d: %s watched nothing", r, gone)
		}
		// Measured: r=1 moves 64 + 53 others, r=2 128 + 87 others of 512.
		if others > held {
			t.Errorf("r=%d: %d other lanes moved when %s left with %d", r, others, gone, held)
		}
		t.Logf("r=%d: %s held %d lanes; %d other lanes moved", r, gone, held, others)
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
