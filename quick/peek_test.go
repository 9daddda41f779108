package quick

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// A pointer written already vested for new work is filed at the last ms of
// the second before its own (its second's new-work ms); one for the future
// keeps its ms, so every entry filed by now is vested.
func TestPointerMs(t *testing.T) {
	for _, c := range []struct{ vest, now, want int64 }{
		{5_250, 5_250, 4_999},
		{5_250, 9_000, 4_999},
		{5_000, 5_000, 4_999},
		{5_999, 5_999, 4_999},
		{5_999, 5_998, 5_999}, // future: exact
		{-250, 0, -1_001},
		{-1_000, 0, -1_001},
	} {
		if got := pointerMs(c.vest, c.now); got != c.want {
			t.Errorf("pointerMs(%d, %d) = %d, want %d", c.vest, c.now, got, c.want)
		}
		if got := pointerMs(c.vest, c.now); got > c.vest {
			t.Errorf("pointerMs(%d, %d) = %d vests after the job", c.vest, c.now, got)
		}
	}
}

var errPeekDone = errors.New("peek done")

// A lane handed back with vested jobs is filed at the hand-back's ms, never
// at a new-work ms: behind every lane that got work in an earlier ms or in
// the same second, ahead of the new work of the next second.
func TestHandBackMs(t *testing.T) {
	for _, c := range []struct{ now, want int64 }{
		{5_000, 5_000},
		{5_250, 5_250},
		{5_998, 5_998},
		{5_999, 5_998}, // the next second's new-work ms
		{-1, -2},
		{0, 0},
	} {
		got := handBackMs(c.now)
		if got != c.want {
			t.Errorf("handBackMs(%d) = %d, want %d", c.now, got, c.want)
		}
		if isFreshMs(got) || got > c.now || got <= freshMs(c.now) || got >= freshMs(c.now)+pointerBucketMs {
			t.Errorf("handBackMs(%d) = %d: a new-work ms, in the future, or not between this second's new work and the next's", c.now, got)
		}
	}
}

// acquireMany runs acquire n times without committing and returns the
// zones it picked.
func (e *zcEnv) acquireMany(t *testing.T, n int, head bool) map[string]int {
	t.Helper()
	picked := map[string]int{}
	for range n {
		err := e.db.Transact(e.ctx, func(tr kv.Transaction) error {
			p, found, _, err := e.q.acquireFrom(tr, "email", "w", 0, head, time.Minute, false, e.q.Now())
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("nothing vested")
			}
			picked[p.ItemSpace]++
			return errPeekDone
		})
		if !errors.Is(err, errPeekDone) {
			t.Fatal(err)
		}
	}
	return picked
}

// Claims start at a random place in the oldest vested second: with many
// tenants vested in it, successive claims spread over far more of them than
// the head's first K, which every claim reading the head shares.
func TestAcquireSpreadsOverTheOldestSecond(t *testing.T) {
	e := newZCEnv(t, Options{})
	jobs := make([]NewJob, 1000)
	for i := range jobs {
		jobs[i] = NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("t%04d", i)}
	}
	e.enqueue(t, jobs...)
	e.clk.Advance(300 * time.Millisecond)
	if got := e.acquireMany(t, 60, true); len(got) > defaultPeek {
		t.Fatalf("reading the head picked %d tenants, want at most %d", len(got), defaultPeek)
	}
	// 60 draws among ~1,000 tenants: fewer than 30 distinct is as good as
	// impossible unless the claims share their candidates.
	if got := e.acquireMany(t, 60, false); len(got) < 30 {
		t.Fatalf("random starts picked only %d distinct tenants of 1000 in 60 claims: %v", len(got), got)
	}
}

// Oldest second first: while an earlier second holds vested pointers, no
// claim takes one of a later second, wherever its random start falls; and
// a lane handed back with vested jobs left goes into the current second.
func TestClaimTakesTheOldestSecondFirst(t *testing.T) {
	e := newZCEnv(t, Options{})
	var old, young []NewJob
	for i := range 40 {
		old = append(old, NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("old%02d", i)})
		young = append(young, NewJob{TaskType: "email", ItemSpace: fmt.Sprintf("young%02d", i)})
	}
	// A big tenant in the old second too, with more jobs than a claim takes.
	for range 30 {
		old = append(old, NewJob{TaskType: "email", ItemSpace: "big"})
	}
	e.enqueue(t, old...)
	e.clk.Advance(time.Hour)
	e.enqueue(t, young...)
	e.clk.Advance(time.Second)
	take := func(claim int) string {
		c := e.claim(t, ClaimOptions{Max: 10})
		if len(c.Jobs) == 0 {
			t.Fatalf("claim %d took nothing", claim)
		}
		return c.Jobs[0].ItemSpace
	}
	bigTaken := false
	for claim := range 41 { // the 40 old tenants and big's first batch
		switch ts := take(claim); {
		case ts == "big" && !bigTaken:
			bigTaken = true
		case strings.HasPrefix(ts, "old"):
		default:
			t.Fatalf("claim %d took %q while the hour-old second still held vested pointers", claim, ts)
		}
	}
	// big was handed back into the current second, after the young one.
	for claim := 41; claim < 81; claim++ {
		if ts := take(claim); !strings.HasPrefix(ts, "young") {
			t.Fatalf("claim %d took %q before the young tenants' earlier second drained", claim, ts)
		}
	}
	if ts := take(81); ts != "big" {
		t.Fatalf("claim 81 took %q, want big's remaining jobs", ts)
	}
}
