package lanes

// TODO(issue 21, console): remove this file once ui/ and cmd/quick list
// workers with worker.ListWorkers. It is the read side of the removed
// lanes registry (the membership heartbeats of schema 1's fleet-wide lane
// assignment), kept only so that the console and the CLI compile until
// they are rewritten: no worker writes the registry any more, so every
// read here finds nothing.

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The heartbeat value is 33 bytes, little-endian:
//
//	counter u64 | wall clock ms i64 | read version i64 | since i64 | flags u8
//
// counter and wall clock are the member's beat number and its clock at the
// beat. The read version is the beat transaction's, read right after the
// clock: a (clock, version) pair lets an observer compare its clock with the
// member's at once, versions being one ruler for every client of the
// cluster (skew.go). since is the read version of the member's first beat
// since it joined: its seniority. Flag bit 0 marks a member on standby: its
// clock disagrees with the others', so it takes no lanes (skew.go).
//
// Observers compare the raw bytes to detect a beat, so a value of any other
// length still counts as a heartbeat; only its decoded fields are then
// unknown. A 16-byte value (counter and clock only) is the format before
// versions: such a member is active, with no version and no seniority.
const (
	hbLen   = 33
	hbLenV1 = 16
)

// hbValue is a decoded heartbeat value.
type hbValue struct {
	counter uint64
	wall    time.Time // valid if wallOK
	wallOK  bool
	// version and since are valid if versionOK (a 33-byte value).
	version, since int64
	versionOK      bool
	standby        bool
}

const flagStandby = 1

func encodeBeat(b hbValue) []byte {
	out := make([]byte, hbLen)
	binary.LittleEndian.PutUint64(out, b.counter)
	binary.LittleEndian.PutUint64(out[8:], uint64(b.wall.UnixMilli()))
	binary.LittleEndian.PutUint64(out[16:], uint64(b.version))
	binary.LittleEndian.PutUint64(out[24:], uint64(b.since))
	if b.standby {
		out[32] = flagStandby
	}
	return out
}

// decodeBeat decodes what it can: the counter from 8 bytes on, the clock
// from a 16- or 33-byte value, versions and flags from a 33-byte value.
func decodeBeat(b []byte) hbValue {
	var out hbValue
	if len(b) >= 8 {
		out.counter = binary.LittleEndian.Uint64(b)
	}
	if len(b) != hbLen && len(b) != hbLenV1 {
		return out
	}
	out.wall, out.wallOK = time.UnixMilli(int64(binary.LittleEndian.Uint64(b[8:]))), true
	if len(b) == hbLen {
		out.version = int64(binary.LittleEndian.Uint64(b[16:]))
		out.since = int64(binary.LittleEndian.Uint64(b[24:]))
		out.versionOK = out.version > 0 && out.since > 0
		out.standby = b[32]&flagStandby != 0
	}
	return out
}

// decodeHB returns the counter (0 if b is shorter than 8 bytes) and the wall
// clock (ok false unless the value has a known length).
func decodeHB(b []byte) (counter uint64, wall time.Time, ok bool) {
	d := decodeBeat(b)
	return d.counter, d.wall, d.wallOK
}

// Info is what a member publishes about itself besides its heartbeat. It
// is written on Join and whenever its lanes change, not on every beat.
type Info struct {
	// Host is the member's host name, for operators.
	Host string
	// NumLanes and Replicas are the parameters the member assigns lanes
	// with. Members of a task type must agree on them, or their lanes will
	// not cover [0, NumLanes) as intended; observers log a disagreement.
	NumLanes int
	Replicas int
	// Lanes are the lanes the member watches, ascending.
	Lanes []int
}

// infoVersion is the first byte of an encoded Info. Decoders reject other
// versions and ignore bytes after the fields they know, so a later version
// 1 encoder may append fields without breaking older readers.
const infoVersion = 1

// Bounds that keep a corrupt record from costing much to decode.
const (
	maxHostLen = 1024
	maxLanes   = 1 << 20
)

// encodeInfo lays Info out as: version byte, uvarint host length, host,
// uvarint NumLanes, uvarint Replicas, uvarint lane count, then the lanes as
// uvarint deltas (the first from -1), so that a typical set of lanes costs
// one byte each.
func encodeInfo(in Info) []byte {
	host := in.Host
	if len(host) > maxHostLen {
		host = host[:maxHostLen]
	}
	b := make([]byte, 0, 8+len(host)+len(in.Lanes))
	b = append(b, infoVersion)
	b = binary.AppendUvarint(b, uint64(len(host)))
	b = append(b, host...)
	b = binary.AppendUvarint(b, uint64(max(in.NumLanes, 0)))
	b = binary.AppendUvarint(b, uint64(max(in.Replicas, 0)))
	b = binary.AppendUvarint(b, uint64(len(in.Lanes)))
	prev := -1
	for _, l := range in.Lanes {
		b = binary.AppendUvarint(b, uint64(l-prev))
		prev = l
	}
	return b
}

// decodeInfo parses an encoded Info. It never panics: malformed input
// yields an error wrapping ErrBadInfo.
func decodeInfo(b []byte) (Info, error) {
	var in Info
	if len(b) == 0 {
		return in, fmt.Errorf("%w: empty", ErrBadInfo)
	}
	if b[0] != infoVersion {
		return in, fmt.Errorf("%w: version %d", ErrBadInfo, b[0])
	}
	r := reader{b: b[1:]}
	hostLen := r.uvarint(maxHostLen)
	host := r.bytes(hostLen)
	numLanes := r.uvarint(maxLanes)
	replicas := r.uvarint(maxLanes)
	count := r.uvarint(numLanes)
	if r.err != nil {
		return Info{}, r.err
	}
	// Each lane takes at least one byte: a count the rest cannot hold is
	// corrupt, and checking first bounds the allocation.
	if count > len(r.b) {
		return Info{}, fmt.Errorf("%w: %d lanes in %d bytes", ErrBadInfo, count, len(r.b))
	}
	lanes := make([]int, 0, count)
	prev := -1
	for range count {
		d := r.uvarint(numLanes)
		if r.err != nil {
			return Info{}, r.err
		}
		if d == 0 || prev+d >= numLanes {
			return Info{}, fmt.Errorf("%w: lane out of order or range", ErrBadInfo)
		}
		prev += d
		lanes = append(lanes, prev)
	}
	in.Host, in.NumLanes, in.Replicas, in.Lanes = string(host), numLanes, replicas, lanes
	return in, nil
}

// reader consumes uvarints and byte strings, remembering the first error.
type reader struct {
	b   []byte
	err error
}

// uvarint reads one uvarint no larger than limit.
func (r *reader) uvarint(limit int) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: truncated or overlong varint", ErrBadInfo)
		return 0
	}
	if v > uint64(limit) {
		r.err = fmt.Errorf("%w: value %d above %d", ErrBadInfo, v, limit)
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("%w: truncated", ErrBadInfo)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
