package quick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Tenant operations (move, adopt, delete) keep one record per tenant and
// task type while they run, S (1, "mv", itemSpace, type): what the
// operation is, the step it has reached, the token of its fence and its
// cursor. A crash at any step leaves the record; calling the operation
// again with the same arguments reads it and carries on from its step
// (docs/design.md, "Moving, adopting and deleting a tenant").

// ErrTenantBusy is returned when another tenant operation (a move to
// another destination, an adoption, a deletion) is under way on the same
// tenant and task type: its record S (1, "mv", itemSpace, type) names it.
// Finish it (call it again) or clear it with CancelTenantOp.
var ErrTenantBusy = errors.New("quick: another operation is under way on this tenant")

// The kinds of tenant operation.
const (
	opMove   = "move"
	opAdopt  = "adopt"
	opDelete = "delete"
)

// The steps of a move, in order (a deletion uses fence and delete, an
// adoption index and lanes).
const (
	stepFence  = "fence"
	stepCopy   = "copy"
	stepAdopt  = "adopt"
	stepDelete = "delete"
	stepIndex  = "index"
	stepLanes  = "lanes"
)

// moveRecord is the value of S (1, "mv", itemSpace, type). JSON: it is
// written a few times per operation, never per job.
type moveRecord struct {
	Kind  string `json:"kind"`
	Step  string `json:"step"`
	Token uint64 `json:"token,omitempty"`
	// Dest is the destination zone's prefix (a move), which a resumed move
	// must name again.
	Dest []byte `json:"dest,omitempty"`
	// FenceUntilMs is when the fence's lane leases lapse unless renewed.
	FenceUntilMs int64 `json:"fence_until_ms,omitempty"`
	// Cursor is where an adoption's walk continues (a key under the zone).
	Cursor []byte `json:"cursor,omitempty"`
	// Done counts the jobs moved, indexed or deleted so far.
	Done      int64 `json:"done"`
	StartedMs int64 `json:"started_ms"`
}

func (r *moveRecord) marshal() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a struct of plain fields always marshals
	}
	return b
}

func (r *moveRecord) unmarshal(b []byte) error {
	*r = moveRecord{}
	if err := json.Unmarshal(b, r); err != nil {
		return fmt.Errorf("%w: tenant operation record: %w", ErrCorrupt, err)
	}
	switch r.Kind {
	case opMove, opAdopt, opDelete:
	default:
		return fmt.Errorf("%w: tenant operation record of kind %q", ErrCorrupt, r.Kind)
	}
	return nil
}

func (k keys) moveSpace() tuple.Subspace { return k.root.Sub("mv") }

// moveKey is S (1, "mv", itemSpace, type).
func (k keys) moveKey(itemSpace, taskType string) []byte {
	return k.moveSpace().Pack(tuple.Tuple{itemSpace, taskType})
}

// loadOp reads the record of a tenant operation (nil: none).
//
// Keys: reads S (1, "mv", itemSpace, type).
func (q *Queue) loadOp(ctx context.Context, itemSpace, taskType string) (*moveRecord, error) {
	var rec *moveRecord
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		rec = nil
		v, err := tr.Get(q.k.moveKey(itemSpace, taskType)).Get()
		if err != nil || v == nil {
			return err
		}
		rec = &moveRecord{}
		return rec.unmarshal(v)
	})
	return rec, err
}

// saveOp writes the record of a tenant operation.
//
// Keys: sets S (1, "mv", itemSpace, type).
func (q *Queue) saveOp(ctx context.Context, itemSpace, taskType string, rec *moveRecord) error {
	return q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		tr.Set(q.k.moveKey(itemSpace, taskType), rec.marshal())
		return nil
	})
}

// clearOp removes the record of a finished tenant operation.
//
// Keys: clears S (1, "mv", itemSpace, type).
func (q *Queue) clearOp(ctx context.Context, itemSpace, taskType string) error {
	return q.transact(ctx, func(tr kv.Transaction, _ bool) error {
		tr.Clear(q.k.moveKey(itemSpace, taskType))
		return nil
	})
}

// TenantOp is a tenant operation under way (or left by a crash).
type TenantOp struct {
	ItemSpace string
	TaskType  string
	// Kind is "move", "adopt" or "delete"; Step the step it has reached.
	Kind, Step string
	// Done counts the jobs moved, indexed or deleted so far.
	Done int64
	// Corrupt is set when the record does not decode.
	Corrupt bool
}

// TenantOps lists the tenant operations under way, at most limit (default
// 100, at most 1000).
//
// Keys: one snapshot range read of S (1, "mv") of at most limit keys.
func (q *Queue) TenantOps(ctx context.Context, limit int) ([]TenantOp, error) {
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var out []TenantOp
	err := q.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		kvs, err := tr.Snapshot().GetRange(rangeOf(q.k.moveSpace()), kv.RangeOptions{Limit: limit}).GetSliceWithError()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			t, err := q.k.moveSpace().Unpack(p.Key)
			if err != nil || len(t) != 2 {
				continue
			}
			is, _ := t[0].(string)
			tt, _ := t[1].(string)
			op := TenantOp{ItemSpace: is, TaskType: tt}
			var rec moveRecord
			if rec.unmarshal(p.Value) != nil {
				op.Corrupt = true
			} else {
				op.Kind, op.Step, op.Done = rec.Kind, rec.Step, rec.Done
			}
			out = append(out, op)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quick: list tenant operations: %w", err)
	}
	return out, nil
}

// CancelTenantOp forgets a tenant operation's record. Jobs are never lost
// by it: a fenced lane's lease lapses at its deadline (MoveOptions.Fence)
// and claims take the lane over; but a move cancelled after its copy
// started leaves the jobs it moved at the destination, adopted or not
// (AdoptTenant there makes them claimable at once).
//
// Keys: clears S (1, "mv", itemSpace, type).
func (q *Queue) CancelTenantOp(ctx context.Context, itemSpace, taskType string) error {
	if err := q.clearOp(ctx, itemSpace, taskType); err != nil {
		return fmt.Errorf("quick: cancel tenant operation %s/%q: %w", taskType, itemSpace, err)
	}
	return nil
}

// tenantTypes is the task types an operation on a tenant covers: one, or
// every known task type (TaskTypes) when taskType is empty.
func (q *Queue) tenantTypes(ctx context.Context, itemSpace, taskType string) ([]string, error) {
	if len(itemSpace) > MaxItemSpaceLen {
		return nil, fmt.Errorf("%w: item space of %d bytes, over %d", ErrInvalidOption, len(itemSpace), MaxItemSpaceLen)
	}
	if taskType != "" {
		if err := validTaskType(taskType); err != nil {
			return nil, err
		}
		return []string{taskType}, nil
	}
	return q.TaskTypes(ctx)
}
