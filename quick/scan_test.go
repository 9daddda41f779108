package quick_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// A scanning claim returns other vested lanes, one per zone first, none of
// the claimed lane's zone; each is claimed with From by another holder
// without a miss. Only when the other zones run out does it add more lanes
// of a zone already chosen.
func TestScanReturnsOneVestedLanePerOtherZone(t *testing.T) {
	for trial := range 10 {
		// 4 hot lanes and 3 cold zones: 7 pointers, all in the index read.
		e := zonesEnv(t, quick.Options{ZoneLanes: 4})
		var jobs []quick.NewJob
		for i := range 64 {
			jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "hot", Payload: []byte(fmt.Sprint(i))})
		}
		for _, s := range []string{"a", "b", "c"} {
			jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: s})
		}
		e.enqueue(t, jobs...)
		first := e.zclaim(t, quick.ClaimOptions{Scan: 3, Max: 1})
		if len(first.Jobs) != 1 {
			t.Fatalf("scanning claim took %d jobs", len(first.Jobs))
		}
		claimed := first.Jobs[0].ItemSpace
		want := 3 // the other zones: three cold ones, or two and the hot one
		if len(first.Candidates) != want {
			t.Fatalf("trial %d: candidates = %+v, want %d (claimed %q)", trial, first.Candidates, want, claimed)
		}
		zones := map[string]bool{claimed: true}
		for i, c := range first.Candidates {
			if zones[c.ItemSpace] {
				t.Fatalf("trial %d: candidate %d of zone %q: a zone twice, or the claimed one, while other zones had vested lanes", trial, i, c.ItemSpace)
			}
			zones[c.ItemSpace] = true
			if c.TaskType != "email" || c.PtrAt.After(epoch) {
				t.Fatalf("candidate %+v", c)
			}
			got := e.zclaim(t, quick.ClaimOptions{From: &first.Candidates[i], Holder: fmt.Sprint("h", i), Max: 100})
			if got.Missed || len(got.Jobs) == 0 {
				t.Fatalf("claim from candidate %+v = %+v", c, got)
			}
			for _, l := range got.Jobs {
				if l.ItemSpace != c.ItemSpace {
					t.Fatalf("claim from a lane of %q took a job of %q", c.ItemSpace, l.ItemSpace)
				}
			}
		}
		// One zone alone: a scan fills up with its other lanes.
		h := zonesEnv(t, quick.Options{ZoneLanes: 4})
		h.enqueue(t, jobs[:64]...)
		more := h.zclaim(t, quick.ClaimOptions{Scan: 4, Max: 1})
		if len(more.Jobs) != 1 || len(more.Candidates) != 3 {
			t.Fatalf("trial %d: scan of one zone of 4 lanes = %d jobs, %d candidates", trial, len(more.Jobs), len(more.Candidates))
		}
		lanes := map[int]bool{}
		for _, c := range more.Candidates {
			if c.ItemSpace != "hot" || lanes[c.Lane] {
				t.Fatalf("trial %d: candidates %+v: want distinct lanes of the hot zone", trial, more.Candidates)
			}
			lanes[c.Lane] = true
		}
		// Without Scan, no candidates.
		if c := e.zclaim(t, quick.ClaimOptions{Max: 1}); len(c.Candidates) != 0 {
			t.Fatalf("claim without Scan returned candidates %+v", c.Candidates)
		}
	}
}

// scanPair enqueues one job in each of two zones and returns a scanning
// claim's result (one lane taken) and its one candidate.
func scanPair(t *testing.T, e *env, a, b string) (quick.Claimed, quick.LaneCandidate) {
	t.Helper()
	e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: a}, quick.NewJob{TaskType: "email", ItemSpace: b})
	res := e.zclaim(t, quick.ClaimOptions{Scan: 4, Holder: "scanner"})
	if len(res.Jobs) != 1 || len(res.Candidates) != 1 {
		t.Fatalf("scanning claim = %+v", res)
	}
	return res, res.Candidates[0]
}

// A candidate another claim leased since is missed, cleanly: no job, no
// error. In short-job mode a second lease of the lane would hand the same
// jobs out twice (the mutant quick.from-stale).
func TestClaimFromALeasedLaneMisses(t *testing.T) {
	e := zonesEnv(t, quick.Options{TaskTypes: map[string]quick.TaskTypeOptions{"email": {ShortJobs: true}}})
	_, c := scanPair(t, e, "a", "b")
	e.enqueue(t, quick.NewJob{TaskType: "email", ItemSpace: c.ItemSpace})
	e.clk.Advance(time.Millisecond)
	won := e.zclaim(t, quick.ClaimOptions{From: &c, Holder: "w1", Max: 10, Keep: true})
	if won.Missed || len(won.Jobs) != 2 || won.Lane == nil || !won.Lane.Short {
		t.Fatalf("first claim from the candidate = %+v", won)
	}
	lost := e.zclaim(t, quick.ClaimOptions{From: &c, Holder: "w2", Max: 10, Keep: true})
	if !lost.Missed || len(lost.Jobs) != 0 || lost.Lane != nil {
		t.Fatalf("second claim from the same candidate = %+v, want Missed and nothing", lost)
	}
	// The lane goes back with nothing left: a candidate of it is missed too.
	for _, l := range won.Jobs {
		if _, err := e.q.Ack(e.ctx, quick.Ack{Lease: l, Kind: quick.AckComplete}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.q.Consumer().ReleaseLane(e.ctx, *won.Lane); err != nil {
		t.Fatal(err)
	}
	if again := e.zclaim(t, quick.ClaimOptions{From: &c, Holder: "w3", Max: 10}); !again.Missed || len(again.Jobs) != 0 {
		t.Fatalf("claim from the lane removed since = %+v", again)
	}
}

// Two claims from one candidate at once: exactly one takes the job, the
// other misses without an error, whatever the interleaving.
func TestConcurrentClaimsFromOneCandidateOneWins(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	for i := range 20 {
		_, c := scanPair(t, e, fmt.Sprint("x", i), fmt.Sprint("y", i))
		var wg sync.WaitGroup
		res := make([]quick.Claimed, 2)
		errs := make([]error, 2)
		for k := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[k], errs[k] = e.q.Consumer().Claim(e.ctx, quick.ClaimOptions{TaskType: "email", Holder: fmt.Sprint("w", k), From: &c, Lease: time.Minute})
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: errors %v, %v", i, errs[0], errs[1])
		}
		if len(res[0].Jobs)+len(res[1].Jobs) != 1 || res[0].Missed == res[1].Missed {
			t.Fatalf("round %d: %+v and %+v, want one job and one miss", i, res[0], res[1])
		}
	}
}

func TestClaimFromAndScanBadOptions(t *testing.T) {
	e := zonesEnv(t, quick.Options{})
	_, c := scanPair(t, e, "a", "b")
	for name, o := range map[string]quick.ClaimOptions{
		"negative scan":   {Scan: -1},
		"scan over cap":   {Scan: 1000},
		"zero candidate":  {From: &quick.LaneCandidate{TaskType: "email"}},
		"other task type": {TaskType: "sms", From: &c},
		"from and lane":   {From: &c, Lane: &quick.LaneLease{}},
		"from, no holder": {From: &c, Holder: "-"},
	} {
		if o.TaskType == "" {
			o.TaskType = "email"
		}
		if o.Holder == "" {
			o.Holder = "w"
		} else if o.Holder == "-" {
			o.Holder = ""
		}
		if o.From != nil && o.From.TaskType == "email" && o.TaskType == "sms" {
			o.From = &c
		}
		if _, err := e.q.Consumer().Claim(e.ctx, o); !errors.Is(err, quick.ErrInvalidOption) {
			t.Errorf("%s: err = %v, want ErrInvalidOption", name, err)
		}
	}
}
