package quick

import (
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/quickfdb/quickfdb/internal/wire"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Tenant limits: what they are, where they are stored and how claims learn
// them (limitgate.go enforces them in the claim's transaction;
// docs/design.md, "Tenant limits").
//
//	S (1, "tl", type)             the task type's default Limits
//	S (1, "tl", type, itemSpace)  a tenant's override
//
// Claims do not read these keys one by one: each process keeps a task
// type's limits in memory (limitsView) and reads them again, in one bounded
// range read in a claim's transaction (loadView), once per limitsRefresh. A
// task type with no limits so costs its claims nothing but that read.

// NoLimit, in a tenant's override, lifts a limit its task type's default
// sets (Concurrency, Rate).
const NoLimit = -1

// Bounds of a limit's fields.
const (
	maxLimitConcurrency = 1_000_000
	maxLimitRate        = 1_000_000
	maxLimitBurst       = 1_000_000
	maxLimitWeight      = 1000
)

// Limits bound a tenant's claims of one task type. The task type's default
// applies to every tenant; a tenant's override replaces it field by field:
// a zero field takes the default's, NoLimit lifts it.
type Limits struct {
	// Concurrency is the most jobs of the tenant leased at once across the
	// fleet (0: none, unless the default sets one). A job whose lease
	// lapsed stops counting at its deadline.
	Concurrency int
	// Rate is the most job starts per second (fractions allowed; 0: none),
	// with Burst starts at once (0: the rate rounded up, at least 1).
	Rate  float64
	Burst int
	// Weight is the tenant's share of a busy task type's claims relative
	// to the other tenants it competes with (0: 1; at most 1000).
	Weight int
}

// IsZero reports whether l sets nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

func (l Limits) validate() error {
	switch {
	case l.Concurrency < NoLimit || l.Concurrency > maxLimitConcurrency:
		return fmt.Errorf("%w: concurrency %d is outside [-1, %d]", ErrInvalidOption, l.Concurrency, maxLimitConcurrency)
	case math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || (l.Rate < 0 && l.Rate != NoLimit) || l.Rate > maxLimitRate:
		return fmt.Errorf("%w: rate %v is not -1 or in [0, %d]", ErrInvalidOption, l.Rate, maxLimitRate)
	case l.Burst < 0 || l.Burst > maxLimitBurst:
		return fmt.Errorf("%w: burst %d is outside [0, %d]", ErrInvalidOption, l.Burst, maxLimitBurst)
	case l.Weight < 0 || l.Weight > maxLimitWeight:
		return fmt.Errorf("%w: weight %d is outside [0, %d]", ErrInvalidOption, l.Weight, maxLimitWeight)
	}
	return nil
}

// over returns def overridden by l, field by field.
func (l Limits) over(def Limits) Limits {
	out := def
	if l.Concurrency != 0 {
		out.Concurrency = l.Concurrency
	}
	if l.Rate != 0 {
		out.Rate = l.Rate
		out.Burst = 0
	}
	if l.Burst != 0 {
		out.Burst = l.Burst
	}
	if l.Weight != 0 {
		out.Weight = l.Weight
	}
	return out
}

// concurrency is the effective concurrency limit, 0 for none.
func (l Limits) concurrency() int { return max(l.Concurrency, 0) }

// rate is the effective rate, 0 for none.
func (l Limits) rate() float64 { return max(l.Rate, 0) }

// burst is the effective burst of a rate limit.
func (l Limits) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return max(1, int(math.Ceil(l.rate())))
}

// weight is the effective weight.
func (l Limits) weight() int { return max(l.Weight, 1) }

// gated reports whether claims of a tenant with effective limits l read
// and write its limit state (a weight alone only shapes the pick).
func (l Limits) gated() bool { return l.concurrency() > 0 || l.rate() > 0 }

// marshal encodes l: 1 concurrency (varint, two's complement), 2 rate
// (fixed64 float bits), 3 burst, 4 weight.
func (l Limits) marshal() []byte {
	b := wire.AppendVarint(nil, 1, uint64(int64(l.Concurrency)))
	if l.Rate != 0 {
		b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(l.Rate))
	}
	b = wire.AppendVarint(b, 3, uint64(l.Burst))
	b = wire.AppendVarint(b, 4, uint64(l.Weight))
	if len(b) == 0 {
		b = []byte{} // a stored empty Limits is an explicit "nothing set"
	}
	return b
}

func (l *Limits) unmarshal(b []byte) error {
	*l = Limits{}
	err := walkValue(b, func(num protowire.Number, typ protowire.Type, _ []byte, x uint64) error {
		switch num {
		case 1:
			l.Concurrency = int(int64(x))
		case 2:
			if typ != protowire.Fixed64Type {
				return fmt.Errorf("%w: limit rate has wire type %d", ErrCorrupt, typ)
			}
			l.Rate = math.Float64frombits(x)
		case 3:
			l.Burst = int(int64(x))
		case 4:
			l.Weight = int(int64(x))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if verr := l.validate(); verr != nil {
		return fmt.Errorf("%w: limits: %w", ErrCorrupt, verr)
	}
	return nil
}

// limitsRefresh is how long a process keeps a task type's limits before it
// reads them again: a change made elsewhere takes effect within it.
const limitsRefresh = time.Second

// maxCachedOverrides bounds the tenant overrides a process keeps per task
// type. Beyond it a claim reads the picked tenant's override (one snapshot
// read) instead, and the weighted pick treats tenants it does not know as
// weight 1.
const maxCachedOverrides = 10_000

// limitsView is what a process knows of a task type's limits.
type limitsView struct {
	at      time.Time
	def     Limits
	over    map[string]Limits
	partial bool // more than maxCachedOverrides overrides: over is a prefix
	// weighted: some effective weight differs from 1, so the pick weighs
	// tenants.
	weighted bool
	// gated: some tenant may be gated (default or an override sets
	// concurrency or rate), so claims look their tenant up.
	gated bool
}

// none reports whether the task type has no limits at all.
func (v *limitsView) none() bool { return v == nil || (!v.weighted && !v.gated) }

// known returns the effective limits of itemSpace when the view holds
// them (always, unless partial and the tenant is not among those held).
func (v *limitsView) known(itemSpace string) (Limits, bool) {
	if o, ok := v.over[itemSpace]; ok {
		return o.over(v.def), true
	}
	return v.def, !v.partial
}

func (k keys) limitsSpace() tuple.Subspace { return k.root.Sub("tl") }

// typeLimitKey is S (1, "tl", type): the task type's default.
func (k keys) typeLimitKey(taskType string) []byte {
	return k.limitsSpace().Pack(tuple.Tuple{taskType})
}

// tenantLimitKey is S (1, "tl", type, itemSpace): a tenant's override.
func (k keys) tenantLimitKey(taskType, itemSpace string) []byte {
	return k.limitsSpace().Pack(tuple.Tuple{taskType, itemSpace})
}

// typeLimitsRange is the default and every override of a task type, the
// default first.
func (k keys) typeLimitsRange(taskType string) kv.KeyRange {
	_, end := k.limitsSpace().Sub(taskType).Range()
	return kv.KeyRange{Begin: k.typeLimitKey(taskType), End: end}
}

// parseLimits makes a view of a task type's limits from the range read of
// S (1, "tl", type) (typeLimitsRange).
func (q *Queue) parseLimits(taskType string, kvs []kv.KeyValue, now time.Time) *limitsView {
	v := &limitsView{at: now}
	defKey := q.k.typeLimitKey(taskType)
	for _, p := range kvs {
		var l Limits
		if derr := l.unmarshal(p.Value); derr != nil {
			// A corrupt record limits nothing; it is reported, not fatal.
			q.opts.Logger.Warn("quick: a tenant limit does not decode; ignored", "task_type", taskType, "err", derr)
			continue
		}
		if string(p.Key) == string(defKey) {
			v.def = l
			continue
		}
		if len(v.over) >= maxCachedOverrides {
			v.partial = true
			break
		}
		t, err := q.k.limitsSpace().Unpack(p.Key)
		if err != nil || len(t) != 2 {
			continue
		}
		is, ok := t[1].(string)
		if !ok {
			continue
		}
		if v.over == nil {
			v.over = map[string]Limits{}
		}
		v.over[is] = l
	}
	v.gated = v.def.gated() || v.partial
	v.weighted = v.def.weight() != 1 || v.partial
	for _, o := range v.over {
		e := o.over(v.def)
		v.gated = v.gated || e.gated()
		v.weighted = v.weighted || e.weight() != 1
	}
	return v
}

// viewLoad is a claim's view of its task type's limits: this process's,
// or, once a second, read again in the claim's own transaction (a snapshot
// range read issued beside the pointer index's, so it adds no round
// trip).
type viewLoad struct {
	q        *Queue
	taskType string
	now      time.Time
	old      *limitsView
	rr       kv.RangeResult // nil: old is fresh
	v        *limitsView
	err      error
	done     bool
}

// loadView issues the claim's read of the limits when this process's view
// is older than limitsRefresh.
//
// Keys: then a snapshot range read of S (1, "tl", type), at most
// maxCachedOverrides+2 keys.
func (q *Queue) loadView(tr kv.Transaction, taskType string, now time.Time) *viewLoad {
	l := &viewLoad{q: q, taskType: taskType, now: now, old: q.cachedView(taskType)}
	if l.old != nil {
		if d := now.Sub(l.old.at); d >= 0 && d < limitsRefresh {
			l.v, l.done = l.old, true
			return l
		}
	}
	l.rr = tr.Snapshot().GetRange(q.k.typeLimitsRange(taskType), kv.RangeOptions{Limit: maxCachedOverrides + 2})
	return l
}

// get returns the view (nil: no limits known), waiting for its read.
func (l *viewLoad) get() *limitsView {
	if l == nil {
		return nil
	}
	if l.done {
		return l.v
	}
	l.done = true
	kvs, err := l.rr.GetSliceWithError()
	if err != nil {
		l.err, l.v = err, l.old
		return l.v
	}
	l.v = l.q.parseLimits(l.taskType, kvs, l.now)
	l.q.limits.Store(l.taskType, l.v)
	return l.v
}

// LimitsInfo is what GetLimits returns: the task type's default, the
// tenant's override (nil when it has none) and their effect.
type LimitsInfo struct {
	Default   Limits
	Override  *Limits
	Effective Limits
}

// GetLimits returns the limits of a tenant's jobs of a task type.
//
// Keys: snapshot reads of S (1, "tl", type) and S (1, "tl", type, itemSpace).
func (q *Queue) GetLimits(ctx context.Context, taskType, itemSpace string) (LimitsInfo, error) {
	if err := validTaskType(taskType); err != nil {
		return LimitsInfo{}, fmt.Errorf("quick: get limits: %w", err)
	}
	var info LimitsInfo
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		info = LimitsInfo{}
		df := tr.Snapshot().Get(q.k.typeLimitKey(taskType))
		of := tr.Snapshot().Get(q.k.tenantLimitKey(taskType, itemSpace))
		dv, err := df.Get()
		if err != nil {
			return err
		}
		ov, err := of.Get()
		if err != nil {
			return err
		}
		if dv != nil {
			if err := info.Default.unmarshal(dv); err != nil {
				return err
			}
		}
		if ov != nil {
			var o Limits
			if err := o.unmarshal(ov); err != nil {
				return err
			}
			info.Override = &o
		}
		return nil
	})
	if err != nil {
		return LimitsInfo{}, fmt.Errorf("quick: get limits of %s/%q: %w", taskType, itemSpace, err)
	}
	info.Effective = info.Default
	if info.Override != nil {
		info.Effective = info.Override.over(info.Default)
	}
	return info, nil
}

// SetTypeLimits sets a task type's default limits (the zero Limits clears
// them). Claims everywhere apply them within a second (limitsRefresh).
//
// Keys: sets or clears S (1, "tl", type).
func (q *Queue) SetTypeLimits(ctx context.Context, taskType string, l Limits) error {
	return q.setLimits(ctx, taskType, q.k.typeLimitKey(taskType), l, true)
}

// SetTenantLimits sets a tenant's override of its task type's default
// limits; ClearTenantLimits removes it.
//
// Keys: sets S (1, "tl", type, itemSpace).
func (q *Queue) SetTenantLimits(ctx context.Context, taskType, itemSpace string, l Limits) error {
	if len(itemSpace) > MaxItemSpaceLen {
		return fmt.Errorf("quick: set limits: %w: item space over %d bytes", ErrInvalidOption, MaxItemSpaceLen)
	}
	return q.setLimits(ctx, taskType, q.k.tenantLimitKey(taskType, itemSpace), l, false)
}

// ClearTenantLimits removes a tenant's override: the default applies.
//
// Keys: clears S (1, "tl", type, itemSpace).
func (q *Queue) ClearTenantLimits(ctx context.Context, taskType, itemSpace string) error {
	if err := validTaskType(taskType); err != nil {
		return fmt.Errorf("quick: clear limits: %w", err)
	}
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		tr.Clear(q.k.tenantLimitKey(taskType, itemSpace))
		return nil
	})
	q.limits.Delete(taskType)
	if err != nil {
		return fmt.Errorf("quick: clear limits of %s/%q: %w", taskType, itemSpace, err)
	}
	return nil
}

func (q *Queue) setLimits(ctx context.Context, taskType string, key []byte, l Limits, isDefault bool) error {
	if err := validTaskType(taskType); err != nil {
		return fmt.Errorf("quick: set limits: %w", err)
	}
	if err := l.validate(); err != nil {
		return fmt.Errorf("quick: set limits of %s: %w", taskType, err)
	}
	if isDefault && (l.Concurrency == NoLimit || l.Rate == NoLimit) {
		// NoLimit lifts a default; a default of none is 0.
		l.Concurrency, l.Rate = max(l.Concurrency, 0), max(l.Rate, 0)
	}
	err := q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		if isDefault && l.IsZero() {
			tr.Clear(key)
			return nil
		}
		tr.Set(key, l.marshal())
		return nil
	})
	// This process sees its own change at once; others within limitsRefresh.
	q.limits.Delete(taskType)
	if err != nil {
		return fmt.Errorf("quick: set limits of %s: %w", taskType, err)
	}
	return nil
}

// TenantLimits is one tenant's override, as ListTenantLimits returns it.
type TenantLimits struct {
	ItemSpace string
	Limits    Limits
}

// maxListLimits bounds one ListTenantLimits call.
const maxListLimits = 1000

// ListTenantLimits lists a task type's tenant overrides in item-space
// order, after the item space after (exclusive; "" with first set lists
// from the start), at most limit (1 to 1000, default 100). more says a
// further call from the last one returned may find more.
//
// Keys: one snapshot range read of S (1, "tl", type, ...), at most limit
// keys.
func (q *Queue) ListTenantLimits(ctx context.Context, taskType, after string, first bool, limit int) (out []TenantLimits, more bool, err error) {
	if err := validTaskType(taskType); err != nil {
		return nil, false, fmt.Errorf("quick: list limits: %w", err)
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxListLimits)
	sub := q.k.limitsSpace().Sub(taskType)
	r := rangeOf(sub)
	if !first {
		r.Begin = kv.KeyAfter(sub.Pack(tuple.Tuple{after}))
	}
	err = q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out, more = out[:0], false
		kvs, err := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: limit + 1}).GetSliceWithError()
		if err != nil {
			return err
		}
		if len(kvs) > limit {
			kvs, more = kvs[:limit], true
		}
		for _, p := range kvs {
			t, err := sub.Unpack(p.Key)
			if err != nil || len(t) != 1 {
				continue
			}
			is, ok := t[0].(string)
			if !ok {
				continue
			}
			var l Limits
			if err := l.unmarshal(p.Value); err != nil {
				return fmt.Errorf("tenant %q: %w", is, err)
			}
			out = append(out, TenantLimits{ItemSpace: is, Limits: l})
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("quick: list limits of %s: %w", taskType, err)
	}
	return out, more, nil
}
