package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Start rate per tenant: how many jobs of each tenant the fleet started
// (claimed) per task type and minute, for the console's tenants page, the
// CLI (quick tenants) and the metrics (quickfdb.queue.tenant_start_rate),
// which show it for the top tenants only.
//
// It is kept as the fleet throughput is (throughput.go): a worker counts
// in memory (one mutex-guarded map add per claimed job) and adds its counts
// to the minute's counters in its clock round's transaction, the one that
// rewrites its presence record, once every clockPeriods heartbeat periods.
// Bounded by construction: a worker counts at most maxTenantTallies
// (type, tenant) pairs between two rounds (the starts of tenants beyond
// them in that round are not counted: the start rate is a lower bound for
// a worker serving more tenants than that in 5 s) and keeps at most
// maxTenantPending counts while its rounds fail; a round adds at most
// maxTenantPending keys. The built-in duty "purge-presence" clears the
// minutes older than tenantStartsKeep with one range clear.
//
// Keys: S (1, "tr", minute, type, itemSpace) -> little-endian int64, added
// atomically (minute: Unix minutes).

// tenantStartsKeep is how long the per-tenant minute counters are kept.
const tenantStartsKeep = 15 * time.Minute

// maxTenantTallies bounds the (type, tenant) pairs a worker counts between
// two rounds; maxTenantPending the counts it keeps while rounds fail.
const (
	maxTenantTallies = 256
	maxTenantPending = 1024
)

// maxTenantStartsRead bounds the tenants one ReadTenantStarts reads.
const maxTenantStartsRead = 1000

func tenantStartsSpace(q *quick.Queue) tuple.Subspace { return q.Root().Sub("tr") }

type trBucket struct {
	minute   int64
	taskType string
	tenant   string
}

type tenantPair struct{ taskType, tenant string }

// tenantStarts is a worker's start counts on their way to the database.
type tenantStarts struct {
	mu      sync.Mutex
	tallies map[tenantPair]int64 // since the last round
	pending map[trBucket]int64   // drained, not yet known committed
}

// count adds one start of tenant's job of taskType.
func (t *tenantStarts) count(taskType, tenant string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := tenantPair{taskType, tenant}
	if _, ok := t.tallies[k]; !ok && len(t.tallies) >= maxTenantTallies {
		return // past the bound: not counted this round
	}
	if t.tallies == nil {
		t.tallies = map[tenantPair]int64{}
	}
	t.tallies[k]++
}

// add drains the tallies into the pending counts (at now's minute) and
// adds every pending count to tr.
//
// Keys: atomic adds to S (1, "tr", minute, type, itemSpace), at most
// maxTenantPending.
func (t *tenantStarts) add(tr kv.Transaction, space tuple.Subspace, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	minute := unixMinute(now)
	for k, n := range t.tallies {
		b := trBucket{minute, k.taskType, k.tenant}
		if _, ok := t.pending[b]; !ok && len(t.pending) >= maxTenantPending {
			continue // rounds keep failing: these starts are not counted
		}
		if t.pending == nil {
			t.pending = map[trBucket]int64{}
		}
		t.pending[b] += n
	}
	clear(t.tallies)
	var buf [8]byte
	for b, n := range t.pending {
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		tr.Add(space.Pack(tuple.Tuple{b.minute, b.taskType, b.tenant}), buf[:])
	}
}

// committed forgets the pending counts: their transaction committed.
func (t *tenantStarts) committed() {
	t.mu.Lock()
	if !mutant.On("worker.tr-committed") {
		clear(t.pending)
	}
	t.mu.Unlock()
}

// purgeTenantStarts clears the minute counters older than tenantStartsKeep.
//
// Keys: one range clear of S (1, "tr") below now - tenantStartsKeep.
func purgeTenantStarts(tr kv.Transaction, q *quick.Queue, now time.Time) {
	space := tenantStartsSpace(q)
	b, _ := space.Range()
	tr.ClearRange(kv.KeyRange{Begin: b, End: space.Pack(tuple.Tuple{unixMinute(now.Add(-tenantStartsKeep))})})
}

// TenantStartRate is a tenant's start rate of one task type.
type TenantStartRate struct {
	// PerSecond is the jobs started a second over the last minute: the
	// counts of the minute before the current one, and of the current one
	// so far, over the time they span. Workers add their counts every few
	// seconds (5 s by default), so the newest seconds are not all in.
	PerSecond float64
	// LastMinute and ThisMinute are those counts.
	LastMinute, ThisMinute int64
}

// ReadTenantStarts reads the start rates of the named tenants of taskType
// (the top tenants a page or a metric shows; at most 1,000), in one
// snapshot transaction of two point reads per tenant.
//
// Keys: point reads of S (1, "tr", minute, taskType, tenant) for the
// current minute and the one before, per tenant.
func ReadTenantStarts(ctx context.Context, q *quick.Queue, taskType string, tenants []string) (map[string]TenantStartRate, error) {
	if q == nil {
		return nil, fmt.Errorf("%w: nil queue", ErrInvalidConfig)
	}
	if len(tenants) > maxTenantStartsRead {
		return nil, fmt.Errorf("%w: %d tenants to read, at most %d", ErrInvalidConfig, len(tenants), maxTenantStartsRead)
	}
	now := q.Now()
	minute := unixMinute(now)
	space := tenantStartsSpace(q)
	// The time the two minutes span: a whole minute and the current
	// one's elapsed part.
	span := time.Minute + now.Sub(time.Unix(minute*60, 0))
	out := make(map[string]TenantStartRate, len(tenants))
	err := q.DB().ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		clear(out)
		type pair struct{ last, this kv.Future[[]byte] }
		fs := make([]pair, len(tenants))
		for i, t := range tenants {
			fs[i].last = tr.Snapshot().Get(space.Pack(tuple.Tuple{minute - 1, taskType, t}))
			fs[i].this = tr.Snapshot().Get(space.Pack(tuple.Tuple{minute, taskType, t}))
		}
		for i, t := range tenants {
			last, err := fs[i].last.Get()
			if err != nil {
				return err
			}
			this, err := fs[i].this.Get()
			if err != nil {
				return err
			}
			r := TenantStartRate{LastMinute: readCounter(last), ThisMinute: readCounter(this)}
			r.PerSecond = float64(r.LastMinute+r.ThisMinute) / span.Seconds()
			out[t] = r
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("worker: read tenant starts: %w", err)
	}
	return out, nil
}

// readCounter reads a little-endian counter; anything else is 0 (not a
// counter this build writes).
func readCounter(v []byte) int64 {
	if len(v) != 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(v))
}
