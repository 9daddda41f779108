package memkv

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
)

// model is the reference: a plain map, sorted on demand.
type model map[string][]byte

func (m model) clone() model {
	out := make(model, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (m model) apply(o fuzzOp) {
	switch o.kind {
	case 'S':
		m[o.key] = o.val
	case 'C':
		delete(m, o.key)
	case 'R':
		for k := range m {
			if k >= o.key && k < o.end {
				delete(m, k)
			}
		}
	case 'A':
		old, ok := m[o.key]
		if v, present := applyAtomic(o.op, old, ok, o.val); present {
			m[o.key] = v
		} else {
			delete(m, o.key)
		}
	}
}

func (m model) rangeRead(b, e string, limit int, reverse bool) []kv.KeyValue {
	var keys []string
	for k := range m {
		if k >= b && k < e {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if reverse {
		slices.Reverse(keys)
	}
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]kv.KeyValue, len(keys))
	for i, k := range keys {
		out[i] = kv.KeyValue{Key: []byte(k), Value: m[k]}
	}
	return out
}

// fuzzOp is one write, kept so a commit can be replayed on the model.
type fuzzOp struct {
	kind     byte // Set, Clear, clear Range, Atomic
	key, end string
	val      []byte
	op       kv.MutationType
}

// program decodes fuzz input into choices; past the end it yields zeros.
type program struct {
	data []byte
	pos  int
}

func (p *program) next() byte {
	if p.pos >= len(p.data) {
		return 0
	}
	b := p.data[p.pos]
	p.pos++
	return b
}

func (p *program) done() bool { return p.pos >= len(p.data) }

// key draws a key of 1–3 bytes from a small alphabet, so operations collide.
func (p *program) key() string {
	const alphabet = "\x00abcd"
	n := 1 + int(p.next())%3
	var sb strings.Builder
	for range n {
		sb.WriteByte(alphabet[int(p.next())%len(alphabet)])
	}
	return sb.String()
}

// value draws a value; some are large, so range reads need several batches.
func (p *program) value() []byte {
	n := int(p.next()) % 8
	if p.next()%4 == 0 {
		n *= 300
	}
	return bytes.Repeat([]byte{p.next()}, n)
}

var fuzzAtomics = []kv.MutationType{
	kv.MutationAdd, kv.MutationBitAnd, kv.MutationBitOr, kv.MutationBitXor,
	kv.MutationAppendIfFits, kv.MutationMax, kv.MutationMin,
	kv.MutationByteMin, kv.MutationByteMax, kv.MutationCompareAndClear,
}

// FuzzRangeRead runs random writes across committed versions and inside
// transactions and checks every read (point and range, both directions, with
// limits, serializable and snapshot, slice and iterator) against a sorted-map
// model, plus the committed state after every commit and the stability of an
// old snapshot.
func FuzzRangeRead(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add(bytes.Repeat([]byte{3, 1, 7, 0, 9, 2, 5}, 20))
	f.Add(bytes.Repeat([]byte{1, 200, 3, 0, 4, 8, 11, 2, 6}, 30))
	f.Fuzz(func(t *testing.T, data []byte) {
		db, _ := newTestDB(t)
		p := &program{data: data}
		committed := model{}

		var tr *txn
		var local model // the transaction's view: its snapshot and its writes
		var ops []fuzzOp
		start := func() {
			tr = begin(t, db)
			if _, err := tr.GetReadVersion().Get(); err != nil {
				t.Fatal(err)
			}
			local, ops = committed.clone(), nil
		}
		start()
		// An old transaction whose snapshot must never change.
		old, oldModel := begin(t, db), model{}
		old.GetReadVersion().Get()

		commit := func() {
			err := tr.Commit()
			switch {
			case err == nil:
				for _, o := range ops {
					committed.apply(o)
				}
			case isCode(err, 1020):
			default:
				t.Fatalf("commit: %v", err)
			}
			checkStored(t, db, committed)
			start()
		}
		write := func(o fuzzOp) {
			switch o.kind {
			case 'S':
				tr.Set([]byte(o.key), o.val)
			case 'C':
				tr.Clear([]byte(o.key))
			case 'R':
				tr.ClearRange(kv.KeyRange{Begin: []byte(o.key), End: []byte(o.end)})
			case 'A':
				tr.Atomic(o.op, []byte(o.key), o.val)
			}
			local.apply(o)
			ops = append(ops, o)
		}

		for steps := 0; !p.done() && steps < 400; steps++ {
			switch c := p.next() % 12; c {
			case 0, 1:
				write(fuzzOp{kind: 'S', key: p.key(), val: p.value()})
			case 2:
				write(fuzzOp{kind: 'C', key: p.key()})
			case 3:
				b, e := p.key(), p.key()
				if b > e {
					b, e = e, b
				}
				write(fuzzOp{kind: 'R', key: b, end: e})
			case 4:
				param := make([]byte, int(p.next())%4)
				for i := range param {
					param[i] = p.next()
				}
				write(fuzzOp{kind: 'A', key: p.key(), op: fuzzAtomics[int(p.next())%len(fuzzAtomics)], val: param})
			case 5, 6, 7:
				b, e := p.key(), p.key()
				if b > e {
					b, e = e, b
				}
				limit := int(p.next()) % 6
				flags := p.next()
				var r kv.ReadTransaction = tr
				if flags&1 != 0 {
					r = tr.Snapshot()
				}
				reverse := flags&2 != 0
				want := local.rangeRead(b, e, limit, reverse)
				opts := kv.RangeOptions{Limit: limit, Reverse: reverse}
				rr := r.GetRange(kv.KeyRange{Begin: []byte(b), End: []byte(e)}, opts)
				var got []kv.KeyValue
				var err error
				if flags&4 != 0 {
					got, err = drain(rr.Iterator())
				} else {
					got, err = rr.GetSliceWithError()
				}
				if err != nil {
					t.Fatalf("range [%q,%q) %+v: %v", b, e, opts, err)
				}
				if d := diffPairs(got, want); d != "" {
					t.Fatalf("range [%q,%q) %+v snapshot=%v: %s", b, e, opts, flags&1 != 0, d)
				}
			case 8:
				k := p.key()
				got, err := tr.Get([]byte(k)).Get()
				if err != nil {
					t.Fatal(err)
				}
				want, ok := local[k]
				if ok != (got != nil) || !bytes.Equal(got, want) {
					t.Fatalf("get %q = %q, want %q (present %v)", k, got, want, ok)
				}
			case 9:
				commit()
			case 10:
				// Another transaction commits a blind write: the current one
				// keeps reading its snapshot.
				o := fuzzOp{kind: 'S', key: p.key(), val: p.value()}
				if p.next()%2 == 0 {
					o = fuzzOp{kind: 'R', key: "", end: p.key()}
				}
				w := begin(t, db)
				switch o.kind {
				case 'S':
					w.Set([]byte(o.key), o.val)
				case 'R':
					w.ClearRange(kv.KeyRange{Begin: []byte(o.key), End: []byte(o.end)})
				}
				mustCommit(t, w)
				committed.apply(o)
			case 11:
				if p.next()%4 == 0 {
					old, oldModel = begin(t, db), committed.clone()
					old.GetReadVersion().Get()
				}
			}
		}
		commit()
		got, err := old.GetRange(kv.KeyRange{Begin: nil, End: []byte{0xff}}, kv.RangeOptions{}).GetSliceWithError()
		if err != nil {
			t.Fatal(err)
		}
		if d := diffPairs(got, oldModel.rangeRead("", "\xff", 0, false)); d != "" {
			t.Fatalf("old snapshot changed: %s", d)
		}
	})
}

func drain(it kv.RangeIterator) ([]kv.KeyValue, error) {
	var out []kv.KeyValue
	for it.Advance() {
		p, err := it.Get()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func checkStored(t *testing.T, db *DB, m model) {
	t.Helper()
	tr := begin(t, db)
	got, err := tr.GetRange(kv.KeyRange{Begin: nil, End: []byte{0xff}}, kv.RangeOptions{}).GetSliceWithError()
	if err != nil {
		t.Fatal(err)
	}
	if d := diffPairs(got, m.rangeRead("", "\xff", 0, false)); d != "" {
		t.Fatalf("committed state: %s", d)
	}
}

func diffPairs(got, want []kv.KeyValue) string {
	show := func(kvs []kv.KeyValue) string {
		var sb strings.Builder
		for _, p := range kvs {
			fmt.Fprintf(&sb, "%q=%d bytes ", p.Key, len(p.Value))
		}
		return sb.String()
	}
	if len(got) != len(want) {
		return fmt.Sprintf("got %d pairs [%s], want %d [%s]", len(got), show(got), len(want), show(want))
	}
	for i := range got {
		// A present value is never nil, even when empty.
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) || got[i].Value == nil {
			return fmt.Sprintf("pair %d: got %q=%x, want %q=%x", i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
		}
	}
	return ""
}
