package quick

import (
	"errors"
	"fmt"

	"github.com/quickfdb/quickfdb/internal/mutant"
	"github.com/quickfdb/quickfdb/kv"
)

// Lease operations on a job (lease.go has the API), on keys that hold the
// whole job.
// A per-job lease is the job key moved to its deadline with the lease's
// token in its value; a short lease (zl.ptr set, short-job mode) is a job
// key that did not move, protected by its holder's lease on the lane.
//
// Every operation reads the job key serializably (a claim or ack that moves
// it meanwhile makes the commit fail) and checks the token; a short lease
// also reads its lane state serializably (checkHold): a takeover changes
// the lane's token, so a stale holder changes nothing.
//
// Mutations, per job:
//
//	complete            1 clear (the job key); + Z (3, id)/Z (4, id) when the job has blobs, and
//	                    the unique key, outcome and lookup index only when the job has them
//	extend, checkpoint  clear + set of the job key (+ Z (4, id) for a checkpoint over InlinePayload)
//	fail/snooze/release clear + set of the job key (and the lane's pointer when it must move earlier)
//	dead letter         deadletter.go
//
// ack.go applies acks, extend.go renewals (Extend, Checkpoint); this file
// holds what they share: the hold checks.

// Short reports whether l is a short-job lease: its job did not move when
// it was handed out, and only its holder's lane lease protects it. Extend
// (or HandBack) moves it to a lease of its own.
func (l Lease) Short() bool { return l.zl != nil && l.zl.ptr != nil }

// key is where a zones lease says its job is.
func (zl *zoneLease) key(id ID) []byte { return zl.lane.jobKey(zl.vestMs, id) }

// zleaseLost is a lost zones lease.
func zleaseLost(id ID, reason string) error { return &LeaseLostError{ID: id, Reason: reason} }

// zlaneLost is a short lease lost with its lane: the error is a
// *LeaseLostError (reason "lane") that also wraps ErrLaneLost.
func zlaneLost(id ID, laneErr error) error {
	return fmt.Errorf("%w: %w", &LeaseLostError{ID: id, Reason: "lane"}, laneErr)
}

// zholds reads the lane states of short leases, once per lane and lease
// token in a transaction, serializably: a takeover of the lane (a new
// token) between the read and the commit makes the commit fail.
type zholds struct {
	byPtr map[*LaneLease]*zhold // the leases of one hand-out share theirs
	byKey map[holdID]*zhold
}

// holdID names a lane lease: its lane state key and token.
type holdID struct {
	state string
	token uint64
}

type zhold struct {
	f    kv.Future[[]byte]
	done bool
	s    laneState
	err  error
}

// read issues the lane-state read of p unless one is issued already.
func (h *zholds) read(tr kv.Transaction, p *LaneLease) {
	if _, ok := h.byPtr[p]; ok {
		return
	}
	if h.byPtr == nil {
		h.byPtr, h.byKey = map[*LaneLease]*zhold{}, map[holdID]*zhold{}
	}
	key := p.lane.stateKey()
	id := holdID{state: string(key), token: p.token}
	z, ok := h.byKey[id]
	if !ok {
		z = &zhold{f: leaseRead(tr).Get(key)}
		h.byKey[id] = z
	}
	h.byPtr[p] = z
}

// check (after read of p or of a copy of it) returns nil when p still holds its lane (a lease that lapsed but
// was not taken over still holds), an error wrapping ErrLaneLost when
// not, or the read's error.
func (h *zholds) check(p *LaneLease) error {
	_, err := h.state(p)
	return err
}

// state is check that also returns the lane state read.
func (h *zholds) state(p *LaneLease) (laneState, error) {
	z, ok := h.byPtr[p]
	if !ok {
		// Another copy of a lane lease read already (read was called
		// with one of them).
		z = h.byKey[holdID{state: string(p.lane.stateKey()), token: p.token}]
		h.byPtr[p] = z
	}
	if z.done {
		return z.s, z.err
	}
	z.done = true
	v, err := z.f.Get()
	if err != nil {
		z.err = err
		return laneState{}, err
	}
	if v == nil || z.s.unmarshal(v) != nil || z.s.Token != p.token {
		z.err = fmt.Errorf("%w: %s", ErrLaneLost, p.lane)
	}
	return z.s, z.err
}

// zheld checks that a zones lease still holds its job: for a short lease
// its lane first, then that the job key is where the lease says with the
// lease's token. f is the serializable read of the job key. It returns the
// stored value.
func (q *Queue) zheld(h *zholds, f kv.Future[[]byte], l Lease) (zjobValue, error) {
	if p := l.zl.ptr; p != nil {
		if err := h.check(p); err != nil {
			if IsLaneLost(err) {
				return zjobValue{}, zlaneLost(l.ID, err)
			}
			return zjobValue{}, err
		}
	}
	v, err := f.Get()
	if err != nil {
		return zjobValue{}, err
	}
	if v == nil {
		// Claimed by another, moved by an extension, acked or cancelled.
		if !mutant.On("quick.moved-key") {
			return zjobValue{}, zleaseLost(l.ID, "moved")
		}
		v = l.zl.v.marshal()
	}
	var zv zjobValue
	if err := zv.unmarshal(v); err != nil {
		return zjobValue{}, fmt.Errorf("quick: job %s: %w", l.ID, err)
	}
	// A key where the lease says may still be another lease's: a lease
	// that lapsed, was claimed at exactly its deadline and released leaves
	// an identical key. Only the token tells them apart.
	if zv.Token != l.zl.v.Token && !mutant.On("quick.token") {
		return zjobValue{}, zleaseLost(l.ID, "token")
	}
	return zv, nil
}

// leaseRead is what lease operations read their job key through: the
// transaction itself, so the read adds a read-conflict range and a claim
// or ack that moves the key meanwhile makes this commit fail.
func leaseRead(tr kv.Transaction) kv.ReadTransaction {
	if mutant.On("quick.conflict-range") {
		return tr.Snapshot()
	}
	return tr
}

// zlostErrors joins lost leases' errors, each with its index; nil if none.
func zlostErrors(what string, errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, fmt.Errorf("quick: %s %d: %w", what, i, err))
		}
	}
	return errors.Join(out...)
}
