package memkv

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
)

// stampedParam builds prefix + 10-byte placeholder + suffix + offset.
func stampedParam(prefix, suffix string) []byte {
	out := append([]byte(prefix), make([]byte, versionstampSize)...)
	out = append(out, suffix...)
	return binary.LittleEndian.AppendUint32(out, uint32(len(prefix)))
}

func TestVersionstamps(t *testing.T) {
	db, _ := newTestDB(t)
	var stamps [][]byte
	var versions []int64
	for i := range 3 {
		tr := begin(t, db)
		tr.SetVersionstampedKey(stampedParam("log/", "/x"), []byte{byte(i)})
		tr.SetVersionstampedValue([]byte("last"), stampedParam("v:", ""))
		f := tr.GetVersionstamp()
		mustCommit(t, tr)
		vs, err := f.Get()
		if err != nil {
			t.Fatal(err)
		}
		cv, _ := tr.GetCommittedVersion()
		if len(vs) != 10 || int64(binary.BigEndian.Uint64(vs)) != cv || binary.BigEndian.Uint16(vs[8:]) != 0 {
			t.Fatalf("stamp %x for version %d", vs, cv)
		}
		if len(stamps) > 0 && bytes.Compare(vs, stamps[len(stamps)-1]) <= 0 {
			t.Fatal("stamps not increasing")
		}
		stamps = append(stamps, vs)
		versions = append(versions, cv)
	}
	tr := begin(t, db)
	kvs, err := tr.GetRange(kv.PrefixRange([]byte("log/")), kv.RangeOptions{}).GetSliceWithError()
	if err != nil || len(kvs) != 3 {
		t.Fatalf("%v %v", kvs, err)
	}
	for i, p := range kvs {
		want := append(append([]byte("log/"), stamps[i]...), "/x"...)
		if !bytes.Equal(p.Key, want) || p.Value[0] != byte(i) {
			t.Fatalf("entry %d: %q=%v", i, p.Key, p.Value)
		}
	}
	if got := mustGet(t, tr, "last"); !bytes.Equal(got, append([]byte("v:"), stamps[2]...)) {
		t.Fatalf("stamped value %q", got)
	}

	// A transaction with no versionstamped operation still gets its stamp.
	tr = begin(t, db)
	tr.Set([]byte("plain"), []byte("x"))
	f := tr.GetVersionstamp()
	mustCommit(t, tr)
	if vs, err := f.Get(); err != nil || len(vs) != 10 {
		t.Fatalf("plain stamp %x %v", vs, err)
	}
	// A read-only one gets 2021.
	tr = begin(t, db)
	f = tr.GetVersionstamp()
	mustCommit(t, tr)
	_, err = f.Get()
	wantCode(t, err, 2021)
	// A failed commit gives 2020 (transaction_invalid_version).
	put(t, db, "c", "0")
	tr = begin(t, db)
	mustGet(t, tr, "c")
	tr.Set([]byte("c"), []byte("1"))
	f = tr.GetVersionstamp()
	put(t, db, "c", "2")
	wantCode(t, tr.Commit(), 1020)
	_, err = f.Get()
	wantCode(t, err, codeTransactionInvalidVersion)
}

func TestVersionstampUnreadable(t *testing.T) {
	db, _ := newTestDB(t)
	put(t, db, "log0", "after")
	put(t, db, "m", "m")
	tr := begin(t, db)
	tr.SetVersionstampedKey(stampedParam("log/", ""), []byte("x"))
	tr.SetVersionstampedValue([]byte("sv"), stampedParam("", ""))

	_, err := tr.Get([]byte("sv")).Get()
	wantCode(t, err, 1036)
	// The landing range: log/ + 10 bytes from (0,0) to ff..ff.
	_, err = tr.Get(append([]byte("log/"), bytes.Repeat([]byte{0x12}, 10)...)).Get()
	wantCode(t, err, 1036)
	_, err = tr.GetRange(rng("log/", "log0"), kv.RangeOptions{}).GetSliceWithError()
	wantCode(t, err, 1036)
	_, err = tr.Snapshot().GetRange(rng("a", "z"), kv.RangeOptions{}).GetSliceWithError()
	wantCode(t, err, 1036)
	// A key written before, inside the landing range, becomes unreadable
	// too, but still commits.
	tr.Set(append([]byte("log/"), bytes.Repeat([]byte{0x34}, 10)...), []byte("early"))
	tr.SetVersionstampedKey(stampedParam("log/", ""), []byte("y"))
	_, err = tr.Get(append([]byte("log/"), bytes.Repeat([]byte{0x34}, 10)...)).Get()
	wantCode(t, err, 1036)
	// Outside it, reads work.
	if got := string(mustGet(t, tr, "log0")); got != "after" {
		t.Fatal(got)
	}
	if got := string(mustGet(t, tr, "m")); got != "m" {
		t.Fatal(got)
	}
	// A range read that stops (at its limit) before the unreadable key is
	// fine; one that reaches it is not.
	kvs, err := tr.GetRange(rng("m", "z"), kv.RangeOptions{Limit: 1}).GetSliceWithError()
	if err != nil || len(kvs) != 1 {
		t.Fatalf("%v %v", kvs, err)
	}
	_, err = tr.GetRange(rng("m", "z"), kv.RangeOptions{}).GetSliceWithError()
	wantCode(t, err, 1036)
	// A Set keeps a stamped-value key unreadable; a Clear makes it readable.
	tr.Set([]byte("sv"), []byte("plain"))
	_, err = tr.Get([]byte("sv")).Get()
	wantCode(t, err, 1036)
	tr.Clear([]byte("sv"))
	if v := mustGet(t, tr, "sv"); v != nil {
		t.Fatal(v)
	}
	// Clearing the landing range drops the versionstamped key.
	tr.ClearRange(rng("log/", "log0"))
	kvs, err = tr.GetRange(rng("log/", "log0"), kv.RangeOptions{}).GetSliceWithError()
	if err != nil || len(kvs) != 0 {
		t.Fatalf("%v %v", kvs, err)
	}
	mustCommit(t, tr)
	if st := db.Stats(); st.Keys != 2 {
		t.Fatalf("keys %d", st.Keys)
	}
}

// Pins FDB 7.3's measured behaviour: a versionstamped key write-conflicts
// at the key it lands on (and only there).
func TestVersionstampWriteConflict(t *testing.T) {
	db, _ := newTestDB(t)
	r := begin(t, db)
	r.GetRange(rng("log/", "log0"), kv.RangeOptions{}).GetSliceWithError()
	w := begin(t, db)
	w.SetVersionstampedKey(stampedParam("log/", ""), []byte("x"))
	mustCommit(t, w)
	r.Set([]byte("z"), []byte("z"))
	wantCode(t, r.Commit(), 1020)

	// A read elsewhere does not conflict.
	r = begin(t, db)
	r.GetRange(rng("other/", "other0"), kv.RangeOptions{}).GetSliceWithError()
	w = begin(t, db)
	w.SetVersionstampedKey(stampedParam("log/", ""), []byte("x"))
	mustCommit(t, w)
	r.Set([]byte("z"), []byte("z"))
	mustCommit(t, r)

	// A versionstamped value does write-conflict on its key.
	r = begin(t, db)
	mustGet(t, r, "sv")
	w = begin(t, db)
	w.SetVersionstampedValue([]byte("sv"), stampedParam("", ""))
	mustCommit(t, w)
	r.Set([]byte("z"), []byte("z"))
	wantCode(t, r.Commit(), 1020)
}

func TestVersionstampBadOffset(t *testing.T) {
	db, _ := newTestDB(t)
	bad := binary.LittleEndian.AppendUint32([]byte("short"), 3)
	tr := begin(t, db)
	tr.SetVersionstampedKey(bad, []byte("x"))
	wantCode(t, tr.Commit(), 2000)
	tr = begin(t, db)
	tr.SetVersionstampedValue([]byte("k"), []byte{1})
	wantCode(t, tr.Commit(), 2000)
}
