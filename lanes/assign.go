package lanes

import (
	"encoding/binary"
	"slices"

	"github.com/zeebo/xxh3"
)

// Assign returns, in ascending order, the lanes of [0, n) that self watches
// when the live members are members: those for which self ranks among the
// top replicas by rendezvous (highest-random-weight) hashing.
//
// Rendezvous hashing is used rather than a ring or a modulo because every
// worker can compute it alone from the member set, it balances without
// virtual nodes, and it moves the least: when a member leaves, only the
// lanes it held move (each to the next member in that lane's ranking), and
// when one joins it only takes lanes, from the members it outranks there.
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
	if replicas < 1 {
		replicas = 1
	}
	others := distinctOthers(members, self)
	out := make([]int, 0, n*replicas/(len(others)+1)+1)
	var h hasher
	for l := 0; l < n; l++ {
		mine := h.weight(l, self)
		better := 0
		for _, m := range others {
			if outranks(h.weight(l, m), m, mine, self) {
				better++
				if better >= replicas {
					break
				}
			}
		}
		if better < replicas {
			out = append(out, l)
		}
	}
	return out
}

// Owners returns the members that watch lane, best ranked first: the top
// replicas of the distinct members by rendezvous hashing. It is the inverse
// view of Assign: self watches lane exactly when Owners(lane, members ∪
// {self}, replicas) contains self.
func Owners(lane int, members []string, replicas int) []string {
	if replicas < 1 {
		replicas = 1
	}
	ms := distinctOthers(members, "")
	var h hasher
	w := make(map[string]uint64, len(ms))
	for _, m := range ms {
		w[m] = h.weight(lane, m)
	}
	slices.SortFunc(ms, func(a, b string) int {
		if outranks(w[a], a, w[b], b) {
			return -1
		}
		if a == b {
			return 0
		}
		return 1
	})
	if len(ms) > replicas {
		ms = ms[:replicas]
	}
	return ms
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
