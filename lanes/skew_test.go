package lanes

import (
	"testing"
	"time"
)

func TestReferenceMajorityOrSenior(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name     string
		cands    []candidate
		wantOff  time.Duration
		majority bool
		wantID   string
	}{
		{"two apart: the senior", []candidate{{id: "me", off: 0, since: 20}, {id: "old", off: 10 * s, since: 10}}, 10 * s, false, "old"},
		{"two apart: me senior", []candidate{{id: "me", off: 0, since: 5}, {id: "new", off: -10 * s, since: 10}}, 0, false, "me"},
		{"senior on standby: the senior active", []candidate{{id: "me", off: 0, since: 20}, {id: "old", off: 10 * s, since: 10, standby: true}, {id: "mid", off: -10 * s, since: 15}}, -10 * s, false, "mid"},
		{"unknown seniority ranks last", []candidate{{id: "me", off: 0, since: 0}, {id: "b", off: 10 * s, since: 99}}, 10 * s, false, "b"},
		{"three of four agree", []candidate{{id: "me", off: 0, since: 1}, {id: "a", off: -10 * s}, {id: "b", off: -10*s + 100*time.Millisecond}, {id: "c", off: -10*s - 100*time.Millisecond}}, -10 * s, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref, maj := reference(c.cands, 1250*time.Millisecond)
			if maj != c.majority || ref.off != c.wantOff || ref.id != c.wantID {
				t.Fatalf("reference %+v majority %v; want off %v majority %v id %q", ref, maj, c.wantOff, c.majority, c.wantID)
			}
		})
	}
}

// The guard allows for its estimate's error: an offset under the limit
// whose bound takes it over stands by; an estimate too imprecise to tell
// leaves the standing as it was.
func TestJudgeAllowsForError(t *testing.T) {
	e := newClockedEnv(t)
	tr := NewTracker(e.reg, "gc", "me", nLanes)
	tr.SetMaxOffset(1250 * time.Millisecond)
	now := e.clock.Now()
	// Two peers at the same offset: with this worker, a majority of three
	// whose median is the peers' clock.
	peer := func(wallOff, half time.Duration) view {
		m := memberState{lastChange: now, wallOK: true, sample: skewSample{
			wall: now.Add(wallOff), lo: now.Add(-half), hi: now.Add(half), ok: true,
		}}
		return view{at: now, members: map[string]memberState{"me": {lastChange: now}, "p": m, "q": m}}
	}
	// 0.9 s off, bound 0.4 s: 0.9 + 0.4 > 1.25: stands by, although the
	// offset alone is under the limit.
	if vd := tr.judge(peer(900*time.Millisecond, 400*time.Millisecond), now, 0, 1, verdict{}, 0); !vd.standby || vd.unsure || !vd.est.Majority {
		t.Fatalf("offset 0.9s ± 0.4s with a 1.25s limit: %+v, want standby", vd)
	}
	// 0.9 s off, bound 0.2 s: 1.1 is within the limit.
	if vd := tr.judge(peer(900*time.Millisecond, 200*time.Millisecond), now, 0, 1, verdict{}, 0); vd.standby {
		t.Fatalf("offset 0.9s ± 0.2s: %+v, want active", vd)
	}
	// Bound 1 s, over half the limit: cannot tell; the standing stays.
	for _, was := range []bool{false, true} {
		vd := tr.judge(peer(1500*time.Millisecond, time.Second), now, 0, 1, verdict{standby: was}, 0)
		if vd.standby != was || !vd.unsure {
			t.Fatalf("imprecise estimate, was standby %v: %+v", was, vd)
		}
	}
}

func FuzzDecodeBeat(f *testing.F) {
	f.Add(encodeBeat(hbValue{counter: 3, wall: time.UnixMilli(5), version: 9, since: 2, standby: true}))
	f.Add(make([]byte, hbLenV1))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decodeBeat(b)
		if d.versionOK && len(b) != hbLen {
			t.Fatalf("versions decoded from %d bytes", len(b))
		}
		if len(b) == hbLen {
			again := decodeBeat(encodeBeat(d))
			if again.counter != d.counter || again.version != d.version || again.since != d.since || again.standby != d.standby || !again.wall.Equal(d.wall) {
				t.Fatalf("round trip %+v -> %+v", d, again)
			}
		}
	})
}

// A worker on standby comes back only with a quarter of the limit to spare,
// so a clock near the limit does not flap.
func TestStandbyComesBackWithMargin(t *testing.T) {
	e := newClockedEnv(t)
	tr := NewTracker(e.reg, "gc", "me", nLanes)
	tr.SetMaxOffset(1200 * time.Millisecond)
	now := e.clock.Now()
	m := memberState{lastChange: now, wallOK: true, sample: skewSample{
		wall: now.Add(time.Second), lo: now.Add(-100 * time.Millisecond), hi: now.Add(100 * time.Millisecond), ok: true,
	}}
	v := view{at: now, members: map[string]memberState{"me": {lastChange: now}, "p": m, "q": m}}
	// 1 s off ± 0.1 s: within 1.2 s, beyond 0.9 s.
	if vd := tr.judge(v, now, 0, 1, verdict{}, 0); vd.standby {
		t.Fatalf("active worker 1.1s off of 1.2s stood by: %+v", vd)
	}
	if vd := tr.judge(v, now, 0, 1, verdict{standby: true, waited: maxHoldRounds}, 0); !vd.standby {
		t.Fatalf("worker on standby 1.1s off came back without margin: %+v", vd)
	}
}

// An imprecise estimate still stands a worker by when it is off beyond
// doubt; and a garbage clock centuries off neither overflows nor wins.
func TestJudgeOffBeyondDoubtAndGarbageClocks(t *testing.T) {
	e := newClockedEnv(t)
	tr := NewTracker(e.reg, "gc", "me", nLanes)
	tr.SetMaxOffset(1250 * time.Millisecond)
	now := e.clock.Now()
	peer := func(wall time.Time, half time.Duration) memberState {
		return memberState{lastChange: now, wallOK: true, sample: skewSample{
			wall: wall, lo: now.Add(-half), hi: now.Add(half), ok: true,
		}}
	}
	// Two peers agree 10 s behind this worker, each ±1 s: imprecise, but
	// 10 - 1 is beyond 1.25.
	v := view{at: now, members: map[string]memberState{"me": {lastChange: now},
		"p": peer(now.Add(-10*time.Second), time.Second), "q": peer(now.Add(-10*time.Second), time.Second)}}
	if vd := tr.judge(v, now, 0, 1, verdict{}, 0); !vd.standby {
		t.Fatalf("10s ± 1s off: %+v, want standby", vd)
	}
	// Clocks at the ends of time: this worker and one sane peer agree, two
	// of four, no majority; this worker, the senior, stays the reference.
	v = view{at: now, members: map[string]memberState{"me": {lastChange: now},
		"far": peer(time.Unix(1<<62, 0), 0), "near": peer(time.Unix(-1<<62, 0), 0), "ok": peer(now, 0)}}
	if vd := tr.judge(v, now, 0, 1, verdict{}, 0); vd.standby || vd.est.Offset != 0 {
		t.Fatalf("garbage clocks: %+v, want active, the reference", vd)
	}
}
