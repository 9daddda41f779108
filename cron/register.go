package cron

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
)

// Register creates or replaces the schedule s.Name and makes sure it has
// exactly one pending (or running) occurrence. It is idempotent:
// registering an unchanged schedule whose chain is intact writes nothing,
// so every process may register its schedules at startup.
//
// A changed schedule gets a new generation, and its pending occurrence is
// cancelled and replaced by the new schedule's next one; an occurrence that
// is running is left to finish, and its completion schedules the successor
// from the new definition. Nothing is enqueued while it runs, even when the
// task type changed (quick's unique key is per task type, so the new type's
// key is free and would not stop a second occurrence): the running one
// finishes first. A spec or time zone that does not parse, or a
// spec that never fires, returns an error wrapping ErrInvalidSpec; other bad
// fields ErrInvalidSchedule, as does an Untracked task type (cron finds
// its occurrences by ID). Nothing is written
// then.
//
// Cost: one transaction (a read of the definition and of the unique key;
// for a new schedule quick's enqueue reads and writes), plus a quick.Get of
// the pending occurrence to check its generation; a change adds a cancel
// and a second transaction to enqueue the new occurrence.
func Register(ctx context.Context, q *quick.Queue, s Schedule) error {
	now := q.Now()
	s, _, err := validate(s, now)
	if err != nil {
		return err
	}
	// cron finds its occurrences by ID (quick.Get, Cancel): an Untracked
	// task type's jobs are not found so.
	if q.Options().TaskTypes[s.TaskType].Untracked {
		return fmt.Errorf("%w: task type %q of schedule %q is Untracked (quick.TaskTypeOptions.Untracked): cron finds its occurrences by ID", ErrInvalidSchedule, s.TaskType, s.Name)
	}
	// Drawn once, outside the retry loop: a retry after an unknown commit
	// finds its own definition unchanged instead of changing it again.
	fresh := definition{Schedule: s, Gen: newGen()}
	var (
		d       definition
		holders []quick.ID // occurrences that hold the unique key
	)
	err = transact(ctx, q.DB(), func(tr kv.Transaction, _ bool) error {
		d, holders = fresh, nil
		key := defKey(q, s.Name)
		v, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		// The task types an occurrence may hold the schedule's unique key
		// under: the new one, the old one, and the one before it (whose
		// occurrence may still be running).
		types := []string{s.TaskType}
		var old definition
		oldOK := false
		if v != nil {
			if old, err = unmarshalDefinition(s.Name, v); err == nil {
				oldOK = true
				if sameConfig(old.Schedule, s) {
					d = old
				}
				for _, t := range []string{old.TaskType, old.PrevTaskType} {
					if t != "" && !slices.Contains(types, t) {
						types = append(types, t)
					}
				}
			}
		}
		held := map[string]bool{}
		for _, t := range types {
			// Serializable: a completion that commits meanwhile (freeing
			// the key, enqueueing a successor from the definition it read)
			// conflicts, and the retry sees its successor to replace.
			hv, err := tr.Get(holderKey(q, t, s.Name)).Get()
			if err != nil {
				return err
			}
			if len(hv) == len(quick.ID{}) {
				holders = append(holders, quick.ID(hv))
				held[t] = true
			}
		}
		if d.Gen == fresh.Gen {
			if oldOK {
				d.PrevTaskType = prevTaskType(old, s.TaskType, held)
			}
			tr.Set(key, d.marshal())
		}
		if len(holders) > 0 {
			return nil // checked below, outside the transaction
		}
		p, err := d.plan(now)
		if err != nil {
			return err
		}
		_, _, err = ensureTx(tr, q, d, p, now, time.Time{})
		return err
	})
	if err != nil {
		return fmt.Errorf("cron: register %q: %w", s.Name, err)
	}
	// An occurrence of another generation is an earlier version's: replace
	// it. (The check is here, not in the transaction, because quick offers
	// no lookup by ID inside one; it also catches an earlier Register that
	// stopped between its steps.)
	// The new version carries on after the time whose completion enqueued
	// the replaced occurrence: that time ran, perhaps on a worker whose
	// clock runs ahead of ours, so that ours still sees it as next.
	stale := false
	var from time.Time
	for _, id := range holders {
		st, at, err := replaceStale(ctx, q, id, d.Gen)
		if err != nil {
			return fmt.Errorf("cron: register %q: replace the old occurrence: %w", s.Name, err)
		}
		stale = stale || st
		if at.After(from) {
			from = at
		}
	}
	if stale {
		if _, err := ensure(ctx, q, s.Name, from); err != nil {
			return fmt.Errorf("cron: register %q: %w", s.Name, err)
		}
	}
	return nil
}

// prevTaskType is the task type a changed schedule remembers besides its
// new one, so that Repair, List and ensureTx see an occurrence still
// running under it (quick's unique key is per task type): the old type, or
// the one before it if only that one's occurrence still holds its key.
func prevTaskType(old definition, newType string, held map[string]bool) string {
	prev := old.TaskType
	if !held[old.TaskType] && old.PrevTaskType != "" && held[old.PrevTaskType] {
		prev = old.PrevTaskType
	}
	if prev == newType {
		return ""
	}
	return prev
}

// replaceStale reports whether the schedule needs a new occurrence because
// occurrence id is gone, or was of another generation than gen and pending
// (then it cancels it, and returns the time of the occurrence whose
// completion enqueued it, if one did). A running
// occurrence of another generation is left to finish: its completion reads
// the new definition and enqueues the next occurrence, so enqueueing one
// now would let two run at once when the task type changed.
func replaceStale(ctx context.Context, q *quick.Queue, id quick.ID, gen uint64) (bool, time.Time, error) {
	info, err := q.Get(ctx, id)
	if quick.IsNotFound(err) {
		return true, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, err
	}
	switch info.State {
	case quick.StateScheduled, quick.StateReady:
	case quick.StateLeased:
		return false, time.Time{}, nil
	default: // finished or dead: it holds nothing any more
		return true, time.Time{}, nil
	}
	env, err := unmarshalEnvelope(info.Payload)
	if err == nil && env.Gen == gen {
		return false, time.Time{}, nil
	}
	return true, env.After, cancelPending(ctx, q, id)
}

// Remove deletes the schedule and cancels its pending occurrence. An
// occurrence that is running is left to finish; its completion finds no
// definition and schedules nothing. It returns an error wrapping
// ErrNotFound when there is no such schedule.
func Remove(ctx context.Context, q *quick.Queue, name string) error {
	var (
		holders []quick.ID
		removed bool
	)
	err := transact(ctx, q.DB(), func(tr kv.Transaction, maybeCommitted bool) error {
		key := defKey(q, name)
		v, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		if v == nil {
			if maybeCommitted && removed {
				// The earlier attempt's removal committed; the holder it
				// read is the one to cancel.
				return nil
			}
			return fmt.Errorf("%w: %q", ErrNotFound, name)
		}
		tr.Clear(key)
		removed = true
		holders = holders[:0]
		if d, err := unmarshalDefinition(name, v); err == nil {
			for _, t := range []string{d.TaskType, d.PrevTaskType} {
				if t == "" {
					continue
				}
				// Serializable, as in Register: a completion that enqueues
				// a successor meanwhile conflicts, and the retry cancels
				// that one.
				hv, err := tr.Get(holderKey(q, t, name)).Get()
				if err != nil {
					return err
				}
				if len(hv) == len(quick.ID{}) {
					holders = append(holders, quick.ID(hv))
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cron: remove %q: %w", name, err)
	}
	for _, h := range holders {
		if err := cancelPending(ctx, q, h); err != nil {
			return fmt.Errorf("cron: remove %q: cancel its occurrence: %w", name, err)
		}
	}
	return nil
}

// cancelPending cancels an occurrence unless a worker holds it (or it is
// gone already). quick has no cancel inside a caller's transaction, so this
// is a transaction of its own, after the definition's: a crash in between
// leaves an occurrence whose handler finds its definition gone or changed
// and skips the run (see Handle). A claim between the lookup and the cancel
// makes the cancel take the job from its worker, whose completion then
// fails with a lost lease: that run is lost, never doubled.
func cancelPending(ctx context.Context, q *quick.Queue, id quick.ID) error {
	info, err := q.Get(ctx, id)
	if quick.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.State != quick.StateScheduled && info.State != quick.StateReady {
		return nil
	}
	if err := q.Cancel(ctx, id); err != nil && !quick.IsNotFound(err) {
		return err
	}
	return nil
}

// ensure runs ensureTx for the stored definition of name, for the first
// time after now and after from.
func ensure(ctx context.Context, q *quick.Queue, name string, from time.Time) (restored bool, err error) {
	err = transact(ctx, q.DB(), func(tr kv.Transaction, maybeCommitted bool) error {
		restored = false
		now := q.Now()
		d, p, found, err := loadTx(tr, q, name, now)
		if err != nil || !found {
			return err
		}
		res, id, err := ensureTx(tr, q, d, p, now, from)
		if err != nil || id.IsZero() {
			return err
		}
		// A duplicate of our own ID after an unknown commit is our own
		// earlier attempt's job.
		restored = !res.Duplicate || (maybeCommitted && res.ID == id)
		return nil
	})
	return restored, err
}

func newGen() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return binary.BigEndian.Uint64(b[:])
}
