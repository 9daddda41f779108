package cron

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Keys, under the queue's root (quick.Queue.Root):
//
//	("cron", name)  the schedule's definition
//
// and, read only, quick's own unique-key index ("u", taskType, "cron:"+name)
// -> the ID of the pending or running occurrence (docs/design.md, "Key
// layout"). quick has no exported way to read a unique key's holder inside a
// transaction; holderKey is the one place that knows the layout.

func defSpace(q *quick.Queue) tuple.Subspace { return q.Root().Sub("cron") }

func defKey(q *quick.Queue, name string) []byte { return defSpace(q).Pack(tuple.Tuple{name}) }

func defRange(q *quick.Queue) kv.KeyRange {
	b, e := defSpace(q).Range()
	return kv.KeyRange{Begin: b, End: e}
}

// nameOf returns the schedule name of a definition key.
func nameOf(q *quick.Queue, key []byte) (string, error) {
	t, err := defSpace(q).Unpack(key)
	if err != nil || len(t) != 1 {
		return "", fmt.Errorf("%w: definition key %x", ErrCorrupt, key)
	}
	name, ok := t[0].(string)
	if !ok {
		return "", fmt.Errorf("%w: definition key %x", ErrCorrupt, key)
	}
	return name, nil
}

// UniqueKey is the unique key of a schedule's occurrences: quick lets at most
// one pending or running job of a task type hold it, so a schedule never has
// two occurrences waiting.
func UniqueKey(name string) string { return "cron:" + name }

// holderKey is quick's unique-key index entry of a schedule's occurrences.
func holderKey(q *quick.Queue, taskType, name string) []byte {
	return q.Root().Sub("u").Pack(tuple.Tuple{taskType, UniqueKey(name)})
}

// occurrenceID is the job ID of the occurrence of a schedule (generation
// gen) at time at. It is a version 7 UUID of time at whose other bits hash
// (name, gen, at), so whoever enqueues that occurrence (the completion of
// its predecessor, a retry of that transaction, Register, any number of
// concurrent repairs) names the same job, and quick's enqueue marker makes
// every enqueue after the first a no-op.
//
// quick refuses IDs older than half its idempotency window, since their
// markers may be purged; an occurrence that runs late under RunOnce may be
// older than that, and then its ID takes now's time instead (the hash still
// names the scheduled time). Such an occurrence is only enqueued by the
// completion of its predecessor, which commits once.
func occurrenceID(name string, gen uint64, at, now time.Time, window time.Duration) quick.ID {
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[0:8], gen)
	binary.BigEndian.PutUint64(buf[8:16], uint64(at.UnixMilli()))
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(buf[:])
	var seed [10]byte
	copy(seed[:], h.Sum(nil))
	idTime := at
	if now.Sub(at) > window/4 {
		idTime = now
	}
	return quick.DeterministicID(idTime, seed)
}
