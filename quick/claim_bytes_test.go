package quick

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Issue 22, item 5: a zones claim is bounded in bytes by construction,
// whatever the names, unique keys and last errors of its jobs and however
// many it is asked for: its budget counts what it writes and the conflict
// ranges it adds per key, and Max is capped. memkv fails a commit over
// FDB's 10 MB with 2101 (transaction_too_large), as FDB does.
func TestZoneClaimOfLongNamesAndErrorsCommits(t *testing.T) {
	e := newZEnv(t, Options{ZoneLanes: 1}, nil)
	tenant := strings.Repeat("t", MaxItemSpaceLen)
	lastErr := strings.Repeat("e", 2000)
	const n = 4000
	now := e.clk.Now()
	z := e.truth.zoneOf("email", tenant)
	for start := 0; start < n; start += 500 {
		err := e.truth.transact(e.ctx, func(tr kv.Transaction, _ bool) error {
			var c coverer
			for i := start; i < min(start+500, n); i++ {
				id := NewID(now)
				uk := fmt.Sprintf("%04d%s", i, strings.Repeat("u", MaxUniqueKeyLen-4))
				l := laneRef{z: z, prio: Normal, lane: 0}
				v := zjobValue{MaxAttempts: 5, Attempt: 1, UniqueKey: uk, LastError: lastErr}
				tr.Set(e.truth.k.uniqKey("email", uk), id[:])
				tr.Set(l.jobKey(now.UnixMilli(), id), v.marshal())
				c.add(l, now.UnixMilli())
			}
			return e.truth.applyCover(tr, &c, now.UnixMilli())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	e.clk.Advance(time.Second)
	seen := map[ID]bool{}
	// A claim asked for 4,000 jobs within 1 MB reads at most the capped
	// Max of keys and writes about 1 MB, whatever the jobs' names and
	// errors.
	before := e.db.Stats()
	// The test is about bytes, not time: under -race on a loaded machine a
	// claim of 1,000 such jobs outlasted the default 2 s timeout (1031) on
	// the embedded engine, whose clock is real time.
	const timeout = time.Minute
	res, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: "w", Max: n, MaxBytes: 1 << 20, Lease: time.Minute, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	d := e.db.Stats().Sub(before)
	if len(res.Jobs) == 0 || !res.More || d.BytesWritten > 1<<20 || d.KeysRead > zclaimMaxJobs+20 {
		t.Fatalf("a claim of Max %d within 1 MB: %d jobs, more %v, %v; want at most 1 MB written and %d keys read", n, len(res.Jobs), res.More, d, zclaimMaxJobs+20)
	}
	for _, l := range res.Jobs {
		seen[l.ID] = true
	}
	for claims := 0; len(seen) < n; claims++ {
		if claims > 100 {
			t.Fatalf("%d claims took %d of %d jobs", claims, len(seen), n)
		}
		res, err := e.q.Consumer().Claim(e.ctx, ClaimOptions{TaskType: "email", Holder: strings.Repeat("h", maxHolderLen), Max: n, Lease: time.Minute, Timeout: timeout})
		if err != nil {
			t.Fatalf("a claim of Max %d after %d jobs: %v", n, len(seen), err)
		}
		if len(res.Jobs) == 0 {
			t.Fatalf("a claim took nothing with %d jobs left", n-len(seen))
		}
		for _, l := range res.Jobs {
			if seen[l.ID] {
				t.Fatalf("job %s claimed twice", l.ID)
			}
			seen[l.ID] = true
			if l.LastError != lastErr {
				t.Fatalf("job %s: last error of %d bytes", l.ID, len(l.LastError))
			}
		}
	}
}
