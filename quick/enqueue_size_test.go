package quick_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

// Issue 22: Enqueue splits its batches at about 512 KB by FDB's own size
// measure (GetApproximateSize: mutations' keys and values, conflict
// ranges' bounds, and FDB's per-entry overhead), however the jobs spread
// over tenants: a job in a new tenant's lane also writes that lane's state
// and pointer, both carrying the zone's name. Counting the payload and
// names once per job, batches over many tenants reached 1–2.5 MB.
func TestZoneEnqueueBatchesStayNearTheirBound(t *testing.T) {
	const bound = 576 << 10 // "about 512 KB"
	cases := []struct {
		name    string
		tenants int
		tenant  int // item space length
		unique  int // unique key length
		payload int
	}{
		{"one tenant, small jobs", 1, 8, 0, 10},
		{"many tenants, long names", 3000, quick.MaxItemSpaceLen, quick.MaxUniqueKeyLen, 100},
		{"many tenants, short names", 6000, 16, 0, 10},
		{"many tenants, large payloads", 400, 64, 0, 4000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newSizeEnv(t, quick.Options{})
			jobs := make([]quick.NewJob, 4000)
			for i := range jobs {
				ts := fmt.Sprintf("%0*d", c.tenant, i%c.tenants)
				j := quick.NewJob{TaskType: "email", ItemSpace: ts, Payload: []byte(strings.Repeat("p", c.payload))}
				if c.unique > 0 {
					j.UniqueKey = fmt.Sprintf("%0*d", c.unique, i)
				}
				jobs[i] = j
			}
			e.largest = 0
			res := e.enqueue(t, jobs...)
			if len(res) != len(jobs) {
				t.Fatalf("%d results for %d jobs", len(res), len(jobs))
			}
			t.Logf("largest enqueue transaction: %d bytes", e.largest)
			if e.largest > bound {
				t.Fatalf("an enqueue transaction carried %d bytes by FDB's measure, over %d (Enqueue says it splits at about 512 KB)", e.largest, bound)
			}
		})
	}
}
