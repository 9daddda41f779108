package lanes

import (
	"bytes"
	"slices"
	"time"
)

// maxExpirePerBeat bounds the expired members one beat clears, so a beat
// stays cheap even after a mass failure; the rest go on later beats.
const maxExpirePerBeat = 4

// memberState is what an observer remembers of one member between rounds.
type memberState struct {
	hb      []byte // raw heartbeat value last seen
	counter uint64
	wall    time.Time // reported wall clock, if wallOK
	wallOK  bool
	// version is the read version of the member's last beat and since that
	// of its first since it joined, if versionOK; standby is its flag.
	version, since int64
	versionOK      bool
	standby        bool

	infoRaw []byte
	hasInfo bool
	info    Info
	infoErr error

	// lastChange is the observer-clock time of the round that first saw
	// the current heartbeat value.
	lastChange time.Time
	// confirmed is set once the observer has seen the heartbeat change, as
	// opposed to only sighting it: only then is it known to be beating.
	confirmed bool
	// sample is the clock reading of the latest observed change, for skew.
	sample skewSample
}

// skewSample is a member's reported wall clock and the bracket (lo, hi], on
// the observer's clock, within which it was written: it was not yet
// visible to the round at lo and was visible to the round at hi.
type skewSample struct {
	wall   time.Time
	lo, hi time.Time
	ok     bool
}

// view is an observer's picture of a task type's members after a round.
type view struct {
	members map[string]memberState
	// at is the observer-clock time of the round; zero before the first.
	at time.Time
}

// observation is the outcome of one round, computed inside the heartbeat
// transaction and applied to the Tracker only once that commits.
type observation struct {
	next    view
	expire  []string // members to clear, dead for ExpireAfter
	joined  []string // members first seen this round
	gone    []string // members whose keys disappeared
	badInfo []string // members whose info changed and does not decode
	newInfo []string // members whose info changed and decodes
}

// observe folds one round's read into the previous view. First sighting
// counts as a change at now; a member's lastChange moves when its raw
// heartbeat bytes differ from the last round's, whatever they decode to, so
// garbage values still prove liveness and clocks are never compared.
func observe(prev view, raw map[string]rawMember, now time.Time, self string, expireAfter time.Duration) observation {
	var o observation
	o.next = view{members: make(map[string]memberState, len(raw)), at: now}
	for id, r := range raw {
		old, seen := prev.members[id]
		hb := r.hb
		if r.hasHB && hb == nil {
			hb = []byte{} // nil means absent in memberState
		}
		changed := !seen || r.hasHB != (old.hb != nil) || !bytes.Equal(hb, old.hb)
		st := old
		if !seen {
			st = memberState{}
			o.joined = append(o.joined, id)
		}
		st.hb = hb
		d := decodeBeat(hb)
		st.counter, st.wall, st.wallOK = d.counter, d.wall, d.wallOK
		st.version, st.since, st.versionOK, st.standby = d.version, d.since, d.versionOK, d.standby
		if changed {
			st.lastChange = now
			st.confirmed = seen
			st.sample = skewSample{}
			// A clock reading is bracketed only when the previous round saw
			// this member with its old value: a first sighting's value may
			// have been written arbitrarily long ago.
			if seen && st.wallOK && !prev.at.IsZero() {
				st.sample = skewSample{wall: st.wall, lo: prev.at, hi: now, ok: true}
			}
		}
		if r.hasInfo != old.hasInfo || !bytes.Equal(r.info, old.infoRaw) || !seen {
			st.infoRaw, st.hasInfo = r.info, r.hasInfo
			st.info, st.infoErr = Info{}, nil
			if r.hasInfo {
				st.info, st.infoErr = decodeInfo(r.info)
				if st.infoErr != nil {
					o.badInfo = append(o.badInfo, id)
				} else {
					o.newInfo = append(o.newInfo, id)
				}
			}
		}
		if id != self && now.Sub(st.lastChange) >= expireAfter {
			o.expire = append(o.expire, id)
		}
		o.next.members[id] = st
	}
	for id := range prev.members {
		if _, ok := raw[id]; !ok {
			o.gone = append(o.gone, id)
		}
	}
	slices.Sort(o.joined)
	slices.Sort(o.gone)
	slices.Sort(o.badInfo)
	slices.Sort(o.newInfo)
	slices.Sort(o.expire)
	if len(o.expire) > maxExpirePerBeat {
		o.expire = o.expire[:maxExpirePerBeat]
	}
	return o
}

// live reports whether a member counts as alive at now: its heartbeat was
// seen to change less than timeout ago on the observer's clock.
func (s memberState) live(now time.Time, timeout time.Duration) bool {
	return now.Sub(s.lastChange) < timeout
}
