package lanes

import (
	"encoding/binary"
	"slices"

	"github.com/zeebo/xxh3"
)

// Assign returns, in ascending order, the lanes of [0, n) that self watches
// when the live members are members.
//
// It is rendezvous (highest-random-weight) hashing with bounded loads: each
// lane goes to the replicas best-ranked members for it that still have room,
// and no member takes more than ceil(n·replicas/W) lanes, W being the number
// of candidates. Every worker computes it alone from the member set, with no
// coordinator. Plain rendezvous hashing moves the fewest lanes but balances
// only on average: with 16 lanes and 2 workers a worker's share is binomial,
// a 10/6 split or worse about half the time, so one worker saturates while
// the other idles (measured by quickbench's fairness run). The bound makes
// shares equal to within one lane; a member leaving or joining then moves its
// own lanes plus a few that overflow, still far fewer than a modulo would.
//
// self is always a candidate, whether or not members lists it: a worker
// computing its own lanes is alive by definition. So with no other members,
// self watches every lane. Duplicates in members are ignored. replicas
// below 1 count as 1; with no more candidates than replicas every candidate
// watches every lane. The result depends only on the set of candidates.
func Assign(n int, members []string, self string, replicas int) []int {
	if n <= 0 {
		return nil
	}
	cands := append(distinctOthers(members, self), self)
	table := assignTable(n, cands, replicas)
	out := make([]int, 0, n*max(replicas, 1)/len(cands)+1)
	for l, owners := range table {
		if slices.Contains(owners, self) {
			out = append(out, l)
		}
	}
	return out
}

// Owners returns the members that watch lane among n lanes, best ranked
// first. It is the inverse view of Assign: self watches lane exactly when
// Owners(lane, n, members ∪ {self}, replicas) contains self.
func Owners(lane, n int, members []string, replicas int) []string {
	if lane < 0 || lane >= n {
		return nil
	}
	return assignTable(n, distinctOthers(members, ""), replicas)[lane]
}

// assignTable gives every lane its owners, best ranked first.
func assignTable(n int, cands []string, replicas int) [][]string {
	if replicas < 1 {
		replicas = 1
	}
	table := make([][]string, n)
	if len(cands) == 0 {
		return table
	}
	if replicas >= len(cands) {
		for l := range table {
			table[l] = slices.Clone(cands)
		}
		return table
	}
	capacity := (n*replicas + len(cands) - 1) / len(cands)
	load := make(map[string]int, len(cands))
	ranked := slices.Clone(cands)
	w := make(map[string]uint64, len(cands))
	var h hasher
	for l := range table {
		for _, m := range cands {
			w[m] = h.weight(l, m)
		}
		slices.SortFunc(ranked, func(a, b string) int {
			if outranks(w[a], a, w[b], b) {
				return -1
			}
			if a == b {
				return 0
			}
			return 1
		})
		owners := make([]string, 0, replicas)
		for _, m := range ranked {
			if load[m] < capacity {
				owners = append(owners, m)
				load[m]++
				if len(owners) == replicas {
					break
				}
			}
		}
		// The last lanes can find fewer members with room than replicas
		// (a member never watches a lane twice): coverage wins over the
		// bound there.
		for _, m := range ranked {
			if len(owners) == replicas {
				break
			}
			if !slices.Contains(owners, m) {
				owners = append(owners, m)
				load[m]++
			}
		}
		table[l] = owners
	}
	return table
}

// outranks orders candidates by weight, breaking the (1 in 2^64) ties by ID
// so the ranking is a total order every worker computes identically.
func outranks(wa uint64, a string, wb uint64, b string) bool {
	if wa != wb {
		return wa > wb
	}
	return a > b
}

// distinctOthers returns members without duplicates, empty IDs, or except.
func distinctOthers(members []string, except string) []string {
	out := make([]string, 0, len(members))
	seen := make(map[string]struct{}, len(members))
	for _, m := range members {
		if m == "" || m == except {
			continue
		}
		if _, dup := seen[m]; dup {
			continue
		}
		seen[m] = struct{}{}
		out = append(out, m)
	}
	return out
}

// hasher computes rendezvous weights: xxh3 of the lane as 8 bytes
// big-endian followed by the member ID. Like Of, this is a format every
// worker must share, pinned by tests; the buffer is reused to avoid an
// allocation per weight.
type hasher struct{ buf []byte }

func (h *hasher) weight(lane int, member string) uint64 {
	h.buf = binary.BigEndian.AppendUint64(h.buf[:0], uint64(lane))
	h.buf = append(h.buf, member...)
	return xxh3.Hash(h.buf)
}
