package lanes

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestInfoRoundTrip(t *testing.T) {
	for _, in := range []Info{
		{},
		{Host: "host-1", NumLanes: 64, Replicas: 2, Lanes: []int{0, 5, 63}},
		{Host: "h", NumLanes: 1 << 20, Replicas: 1, Lanes: []int{1<<20 - 1}},
		{NumLanes: 1024, Replicas: 1, Lanes: allLanes(1024)},
	} {
		b := encodeInfo(in)
		got, err := decodeInfo(b)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", in, err)
		}
		if got.Host != in.Host || got.NumLanes != in.NumLanes || got.Replicas != in.Replicas || !slices.Equal(got.Lanes, in.Lanes) {
			t.Errorf("round trip: %+v -> %+v", in, got)
		}
	}
}

// A typical record is a few bytes per lane at most: small lane gaps take
// one byte each.
func TestInfoCompact(t *testing.T) {
	in := Info{Host: "worker-host-01", NumLanes: 256, Replicas: 1, Lanes: Assign(256, workers(4), "worker-0", 1)}
	b := encodeInfo(in)
	if limit := 1 + 1 + len(in.Host) + 2 + 1 + 2 + len(in.Lanes); len(b) > limit {
		t.Errorf("%d lanes encode in %d bytes, want at most %d", len(in.Lanes), len(b), limit)
	}
}

// A later version-1 writer may append fields; older readers ignore them.
func TestInfoIgnoresTrailingBytes(t *testing.T) {
	in := Info{Host: "h", NumLanes: 8, Replicas: 1, Lanes: []int{1, 2}}
	got, err := decodeInfo(append(encodeInfo(in), 0xde, 0xad))
	if err != nil || !slices.Equal(got.Lanes, in.Lanes) {
		t.Fatalf("trailing bytes: %+v, %v", got, err)
	}
}

func TestInfoRejects(t *testing.T) {
	good := encodeInfo(Info{Host: "h", NumLanes: 8, Replicas: 1, Lanes: []int{1, 2}})
	for name, b := range map[string][]byte{
		"empty":         {},
		"version":       append([]byte{2}, good[1:]...),
		"truncated":     good[:len(good)-1],
		"host too long": {1, 0xff, 0xff, 0x03},
		"lane >= n":     {1, 0, 4, 1, 1, 5},
		"repeat lane":   {1, 0, 4, 1, 2, 1, 0},
		"huge count":    {1, 0, 0xff, 0xff, 0x3f, 1, 0xff, 0xff, 0x3f},
		"overlong":      {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		if _, err := decodeInfo(b); !errors.Is(err, ErrBadInfo) {
			t.Errorf("%s: err %v, want ErrBadInfo", name, err)
		}
	}
}

// Random garbage, and random mutations of good records, never panic.
func TestInfoGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	good := encodeInfo(Info{Host: "host", NumLanes: 300, Replicas: 2, Lanes: []int{0, 1, 130, 299}})
	for range 20000 {
		var b []byte
		if rng.IntN(2) == 0 {
			b = make([]byte, rng.IntN(40))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
		} else {
			b = slices.Clone(good)
			b[rng.IntN(len(b))] = byte(rng.Uint32())
			b = b[:rng.IntN(len(b)+1)]
		}
		decodeInfo(b) //nolint:errcheck // only checking it does not panic
		decodeHB(b)
	}
}

func FuzzDecodeInfo(f *testing.F) {
	f.Add(encodeInfo(Info{Host: "h", NumLanes: 8, Replicas: 1, Lanes: []int{1, 2}}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := decodeInfo(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to a prefix of the input (trailing bytes
		// are ignored) and satisfies the invariants.
		for i, l := range in.Lanes {
			if l < 0 || l >= in.NumLanes || (i > 0 && l <= in.Lanes[i-1]) {
				t.Fatalf("decoded lanes %v of %d", in.Lanes, in.NumLanes)
			}
		}
		if _, err := decodeInfo(encodeInfo(in)); err != nil {
			t.Fatalf("re-encoding %+v: %v", in, err)
		}
	})
}

func TestHeartbeatValue(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	in := hbValue{counter: 42, wall: now, version: 7_000_000, since: 5_000_000, standby: true}
	b := encodeBeat(in)
	if len(b) != hbLen {
		t.Fatalf("len %d", len(b))
	}
	got := decodeBeat(b)
	if got.counter != 42 || !got.wallOK || !got.wall.Equal(now) || !got.versionOK ||
		got.version != in.version || got.since != in.since || !got.standby {
		t.Errorf("decode: %+v", got)
	}
	// The format before versions: counter and clock, an active member.
	v1 := b[:hbLenV1]
	if got := decodeBeat(v1); got.counter != 42 || !got.wallOK || got.versionOK || got.standby {
		t.Errorf("16 bytes: %+v", got)
	}
	if c, _, ok := decodeHB(b[:8]); c != 42 || ok {
		t.Errorf("8 bytes: %d %v", c, ok)
	}
	if c, _, ok := decodeHB(nil); c != 0 || ok {
		t.Errorf("nil: %d %v", c, ok)
	}
}
