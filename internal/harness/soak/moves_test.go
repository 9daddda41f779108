package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// movedHistory is a clean history of a moved tenant: a short-job hand-out
// of job s at the source whose completion failed (the fence), handed out
// again at the destination at the same attempt and completed there, and a
// per-job lease of job p revoked by the copy, claimed again with its next
// attempt; and a tenant deleted with one job completed before and one
// deleted unfinished.
func movedHistory() (History, time.Time) {
	t0 := time.Unix(1_900_000_000, 0)
	s, p, d1, d2 := quick.NewID(t0), quick.NewID(t0), quick.NewID(t0), quick.NewID(t0)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	return History{
		Jobs: []JobRec{
			{ID: s, Kind: KindNormal, Producer: moveProducerID, Seq: 0, TaskType: shortType, Tenant: "t04"},
			{ID: p, Kind: KindNormal, Producer: moveProducerID, Seq: 1, TaskType: workType, Tenant: "t04"},
			{ID: d1, Kind: KindNormal, Producer: deleteProducerID, Seq: 0, TaskType: workType, Tenant: "del01"},
			{ID: d2, Kind: KindNormal, Producer: deleteProducerID, Seq: 1, TaskType: workType, Tenant: "del01"},
		},
		Claims: []ClaimRec{
			// The destination's claim is recorded (started) first: the
			// source's hand-out was prefetched and started late.
			{ID: s, Token: 7, Attempt: 1, Worker: "a002", Claimed: at(3), At: at(3), Short: true},
			{ID: s, Token: 7, Attempt: 1, Worker: "w001", Claimed: at(0.5), At: at(4), Short: true},
			{ID: p, Token: 8, Attempt: 1, Worker: "w002", Claimed: at(0.5), At: at(0.5)},
			{ID: p, Token: 9, Attempt: 2, Worker: "a001", Claimed: at(12), At: at(12)},
			{ID: d1, Token: 10, Attempt: 1, Worker: "w003", Claimed: at(20), At: at(20)},
		},
		Runs: []RunRec{
			{ID: s, Token: 7, Worker: "a002", Start: at(3), End: at(3.1)},
			{ID: s, Token: 7, Worker: "w001", Start: at(4), End: at(4.1), Err: "lease lost", LeaseLost: true},
			{ID: p, Token: 8, Worker: "w002", Start: at(0.5), End: at(6), Err: "lease lost", LeaseLost: true},
			{ID: p, Token: 9, Worker: "a001", Start: at(12), End: at(12.1)},
			{ID: d1, Token: 10, Worker: "w003", Start: at(20), End: at(20.1)},
		},
		Completions: []CompletionRec{
			{ID: s, Token: 7, Attempt: 1, Worker: "a002"},
			{ID: p, Token: 9, Attempt: 2, Worker: "a001"},
			{ID: d1, Token: 10, Attempt: 1, Worker: "w003"},
		},
		Moves:   []MoveRec{{Tenant: "t04", Kind: MoveAway, From: at(1), To: at(5), Jobs: 2}},
		Fences:  []FenceRec{{Tenant: "t04", TaskType: workType, From: at(1.2), To: at(3.5)}},
		Deletes: []DeleteRec{{Tenant: "del01", From: at(21), To: at(22), Jobs: 1}},
	}, t0
}

func TestCheckerCountsReRunsAtAMovesFence(t *testing.T) {
	h, _ := movedHistory()
	v := Check(h)
	if len(v.Violations) != 0 {
		t.Fatalf("violations in a clean history of moves: %v", v.Violations)
	}
	if v.FenceReruns != 2 || v.DeletedJobs != 2 || v.Jobs != 4 {
		t.Fatalf("fence re-runs %d (want 2), deleted jobs %d (want 2), jobs %d (want 4)", v.FenceReruns, v.DeletedJobs, v.Jobs)
	}
}

// The rules the moves add stop at what a move explains: two hand-outs at
// one attempt with no move between them are a duplicate, a claim while a
// move held its zones fenced is a broken fence; a deleted
// tenant's job claimed after its deletion returned, or still stored, and a
// key left of a deleted tenant are violations.
func TestCheckerReportsViolationsAroundMoves(t *testing.T) {
	cases := []struct {
		name  string
		plant func(h *History, t0 time.Time)
		want  string
	}{
		{"hand-out twice without a move", func(h *History, _ time.Time) { h.Moves = nil }, "claimed twice at attempt 1"},
		{"claim while the move held its zones fenced", func(h *History, _ time.Time) { h.Fences[0].TaskType = shortType }, "held both zones fenced"},
		{"deleted job claimed after the deletion", func(h *History, t0 time.Time) {
			h.Claims = append(h.Claims, ClaimRec{ID: h.Jobs[3].ID, Token: 11, Attempt: 1, Worker: "w004", Claimed: t0.Add(23 * time.Second), At: t0.Add(23 * time.Second)})
			h.Runs = append(h.Runs, RunRec{ID: h.Jobs[3].ID, Token: 11, Worker: "w004", Start: t0.Add(23 * time.Second), End: t0.Add(24 * time.Second), LeaseLost: true})
		}, "after its deletion returned"},
		{"deleted job still queued", func(h *History, _ time.Time) { h.Pending = append(h.Pending, h.Jobs[3].ID) }, "after the tenant was deleted"},
		{"key left of a deleted tenant", func(h *History, _ time.Time) {
			h.Left = append(h.Left, "tenant del01 was deleted, but 1 keys of its zones and 0 pointers naming it are left")
		}, "are left"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, t0 := movedHistory()
			c.plant(&h, t0)
			v := Check(h)
			if !strings.Contains(strings.Join(v.Violations, "\n"), c.want) {
				t.Fatalf("want a violation containing %q, got %v", c.want, v.Violations)
			}
		})
	}
}
