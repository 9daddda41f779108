//go:build fdb

// This file checks the package against the official Go binding, which needs
// cgo and libfdb_c (no cluster). Run it where FoundationDB's client is
// installed:
//
//	go test -tags fdb -run CrossCheck ./tuple/
//
// The seed is logged; set TUPLE_CROSSCHECK_SEED to replay a failure.

package tuple

import (
	"bytes"
	"math/big"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"
	fdbsubspace "github.com/apple/foundationdb/bindings/go/src/fdb/subspace"
	fdbtuple "github.com/apple/foundationdb/bindings/go/src/fdb/tuple"
)

const crossCheckRounds = 20000

func crossCheckRand(t *testing.T) *rand.Rand {
	seed := time.Now().UnixNano()
	if s := os.Getenv("TUPLE_CROSSCHECK_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("TUPLE_CROSSCHECK_SEED: %v", err)
		}
	}
	t.Logf("seed %d (set TUPLE_CROSSCHECK_SEED to replay)", seed)
	return rand.New(rand.NewSource(seed))
}

// randomTuple draws a tuple from the fuzz generator, which covers every
// element type and the encoding's boundary values.
func randomTuple(rng *rand.Rand) Tuple {
	data := make([]byte, rng.Intn(200))
	rng.Read(data)
	return genTuple(&byteSource{b: data}, 0)
}

// toOfficial converts to the official binding's types. It widens the
// integer types the official Pack does not accept, and passes big.Int
// values by pointer, which its String prints properly; neither changes the
// encoding.
func toOfficial(t Tuple) fdbtuple.Tuple {
	out := make(fdbtuple.Tuple, len(t))
	for i, el := range t {
		switch x := el.(type) {
		case Tuple:
			out[i] = toOfficial(x)
		case UUID:
			out[i] = fdbtuple.UUID(x)
		case Versionstamp:
			out[i] = fdbtuple.Versionstamp{TransactionVersion: x.TransactionVersion, UserVersion: x.UserVersion}
		case int8, int16, int32:
			n, _ := asInteger(x)
			out[i] = n.i
		case uint8, uint16, uint32:
			n, _ := asInteger(x)
			out[i] = uint64(n.i)
		case big.Int:
			out[i] = &x
		default:
			out[i] = el
		}
	}
	return out
}

// fromOfficial converts a tuple decoded by the official binding. The types
// map one to one; only nil-ness differs: the official decoder returns nil
// for empty byte strings and tuples where this package returns empty ones.
func fromOfficial(t fdbtuple.Tuple) Tuple {
	out := make(Tuple, len(t))
	for i, el := range t {
		switch x := el.(type) {
		case fdbtuple.Tuple:
			out[i] = fromOfficial(x)
		case fdbtuple.UUID:
			out[i] = UUID(x)
		case fdbtuple.Versionstamp:
			out[i] = Versionstamp{TransactionVersion: x.TransactionVersion, UserVersion: x.UserVersion}
		case []byte:
			out[i] = append([]byte{}, x...)
		default:
			out[i] = el
		}
	}
	return out
}

// officialPack returns the official encoding, or ok=false if it panicked
// (it does on incomplete versionstamps).
func officialPack(t fdbtuple.Tuple) (b []byte, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return t.Pack(), true
}

func TestCrossCheckPack(t *testing.T) {
	rng := crossCheckRand(t)
	for range crossCheckRounds {
		tup := randomTuple(rng)
		off := toOfficial(tup)
		if countIncomplete(tup) > 0 {
			_, ours := tup.PackChecked()
			if _, ok := officialPack(off); ok || ours == nil {
				t.Fatalf("%v: both packages must reject a placeholder in Pack (ours: %v)", tup, ours)
			}
			continue
		}
		want, ok := officialPack(off)
		if !ok {
			t.Fatalf("official Pack panicked on %v", tup)
		}
		got := tup.Pack()
		if !bytes.Equal(got, want) {
			t.Fatalf("Pack(%v)\n got % x\nwant % x", tup, got, want)
		}
		if got, want := tup.String(), off.String(); got != want {
			t.Fatalf("String()\n got %s\nwant %s", got, want)
		}

		ours, err := Unpack(want)
		if err != nil {
			t.Fatalf("Unpack(% x): %v", want, err)
		}
		theirs, err := fdbtuple.Unpack(got)
		if err != nil {
			t.Fatalf("official Unpack(% x): %v", got, err)
		}
		if conv := fromOfficial(theirs); !identical(ours, conv) {
			t.Fatalf("decoded values differ for % x\n ours %#v\n official %#v", got, ours, conv)
		}
	}
}

func TestCrossCheckPackWithVersionstamp(t *testing.T) {
	if !fdb.IsAPIVersionSelected() {
		if err := fdb.APIVersion(730); err != nil {
			t.Skipf("cannot select API version: %v", err)
		}
	}
	if v, err := fdb.GetAPIVersion(); err != nil || v < 520 {
		t.Skipf("API version %d uses the 2-byte offset form (%v)", v, err)
	}
	rng := crossCheckRand(t)
	prefix := []byte("\xfe\x00pre")
	for range crossCheckRounds {
		tup := randomTuple(rng)
		if rng.Intn(2) == 0 {
			tup = append(tup, IncompleteVersionstamp(uint16(rng.Intn(1<<16))))
		}
		got, err := tup.PackWithVersionstamp(prefix)
		want, werr := toOfficial(tup).PackWithVersionstamp(prefix)
		if (err == nil) != (werr == nil) {
			t.Fatalf("PackWithVersionstamp(%v): ours %v, official %v", tup, err, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("PackWithVersionstamp(%v)\n got % x\nwant % x", tup, got, want)
		}
		has, herr := tup.HasIncompleteVersionstamp()
		whas, wherr := toOfficial(tup).HasIncompleteVersionstamp()
		if has != whas || (herr == nil) != (wherr == nil) {
			t.Fatalf("HasIncompleteVersionstamp(%v) = %v, %v; official %v, %v", tup, has, herr, whas, wherr)
		}
	}
}

func TestCrossCheckSubspace(t *testing.T) {
	rng := crossCheckRand(t)
	for range crossCheckRounds / 10 {
		raw := make([]byte, rng.Intn(6))
		rng.Read(raw)
		el := randomTuple(rng)
		key := randomTuple(rng)
		if countIncomplete(el)+countIncomplete(key) > 0 {
			continue
		}
		ours := NewSubspace(raw).Sub(el...)
		theirs := fdbsubspace.FromBytes(raw).Sub(toOfficial(el)...)
		if !bytes.Equal(ours.Bytes(), theirs.Bytes()) {
			t.Fatalf("Sub(%v) prefix % x, official % x", el, ours.Bytes(), theirs.Bytes())
		}
		if ours.String() != theirs.(interface{ String() string }).String() {
			t.Fatalf("String() %s, official %s", ours, theirs)
		}
		k := ours.Pack(key)
		if want := theirs.Pack(toOfficial(key)); !bytes.Equal(k, want) {
			t.Fatalf("Pack(%v) % x, official % x", key, k, want)
		}
		begin, end := ours.Range()
		wb, we := theirs.FDBRangeKeys()
		if !bytes.Equal(begin, wb.FDBKey()) || !bytes.Equal(end, we.FDBKey()) {
			t.Fatalf("Range() = % x, % x; official % x, % x", begin, end, wb.FDBKey(), we.FDBKey())
		}
		dec, err := ours.Unpack(k)
		wdec, werr := theirs.Unpack(fdb.Key(k))
		if err != nil || werr != nil || !identical(dec, fromOfficial(wdec)) {
			t.Fatalf("Unpack(% x) = %v, %v; official %v, %v", k, dec, err, wdec, werr)
		}
		if ours.Contains(k) != theirs.Contains(fdb.Key(k)) {
			t.Fatalf("Contains(% x) disagrees", k)
		}
	}
}
