package memkv

import (
	"bytes"
	"fmt"
	"math/big"
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
		if v, present := modelAtomic(o.op, old, ok, o.val); present {
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

// modelAtomic is the model's own reading of FDB's atomic operations
// (fdbclient/Atomic.h, API version 730), written apart from the engine's:
// little-endian integers go through math/big, bitwise operations over a
// zero-padded old value. A missing key takes param for every operation but
// CompareAndClear, which leaves it missing.
func modelAtomic(op kv.MutationType, old []byte, present bool, param []byte) ([]byte, bool) {
	n := len(param)
	padded := make([]byte, n) // old, zero-extended or cut to param's length
	copy(padded, old)
	le := func(b []byte) *big.Int {
		r := slices.Clone(b)
		slices.Reverse(r)
		return new(big.Int).SetBytes(r)
	}
	toLE := func(x *big.Int) []byte {
		x = new(big.Int).Mod(x, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
		out := make([]byte, n)
		be := x.Bytes()
		for i := range be {
			out[i] = be[len(be)-1-i]
		}
		return out
	}
	bitwise := func(f func(a, b byte) byte) []byte {
		out := make([]byte, n)
		for i := range out {
			out[i] = f(padded[i], param[i])
		}
		return out
	}
	switch op {
	case kv.MutationCompareAndClear:
		if !present || bytes.Equal(old, param) {
			return nil, false
		}
		return old, true
	case kv.MutationByteMin, kv.MutationByteMax:
		if !present {
			return param, true
		}
		if c := bytes.Compare(old, param); (op == kv.MutationByteMin && c < 0) || (op == kv.MutationByteMax && c > 0) {
			return old, true
		}
		return param, true
	}
	if !present {
		return param, true
	}
	switch op {
	case kv.MutationAdd:
		if len(old) == 0 {
			return param, true
		}
		return toLE(new(big.Int).Add(le(padded), le(param))), true
	case kv.MutationBitAnd:
		return bitwise(func(a, b byte) byte { return a & b }), true
	case kv.MutationBitOr:
		return bitwise(func(a, b byte) byte { return a | b }), true
	case kv.MutationBitXor:
		return bitwise(func(a, b byte) byte { return a ^ b }), true
	case kv.MutationAppendIfFits:
		if len(old)+n > kv.MaxValueSize {
			return old, true
		}
		return append(slices.Clone(old), param...), true
	case kv.MutationMax:
		if len(old) == 0 || le(param).Cmp(le(padded)) >= 0 {
			return param, true
		}
		return padded, true
	case kv.MutationMin:
		if le(param).Cmp(le(padded)) <= 0 {
			return param, true
		}
		return padded, true
	}
	panic(fmt.Sprintf("model: unknown atomic %v", op))
}

// readSet is what the model knows of a transaction's read-conflict ranges:
// sure holds single keys read serializably before the transaction wrote
// them (they conflict for certain); maybe holds every serializable read's
// whole range (nothing outside it can conflict).
type readSet struct {
	sure  map[string]bool
	maybe [][2]string
	// written holds the keys and ranges the transaction wrote so far.
	written []fuzzOp
}

func (r *readSet) writtenHere(k string) bool {
	for _, o := range r.written {
		if (o.kind == 'R' && k >= o.key && k < o.end) || (o.kind != 'R' && o.key == k) {
			return true
		}
	}
	return false
}

// hits reports whether a concurrent write o touches the key range [b, e).
func hits(o fuzzOp, b, e string) bool {
	if o.kind == 'R' {
		return o.key < e && b < o.end
	}
	return o.key >= b && o.key < e
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
// model with its own atomic operations, plus the committed state after every
// commit, whether it had to conflict or could not (readSet), and the
// stability of an old snapshot.
func FuzzRangeRead(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add(bytes.Repeat([]byte{3, 1, 7, 0, 9, 2, 5}, 20))
	f.Add(bytes.Repeat([]byte{1, 200, 3, 0, 4, 8, 11, 2, 6}, 30))
	// A read, another client's write of that key, and an empty clear range:
	// the commit is read-only and must not conflict.
	f.Add([]byte("800\"000001800c"))
	f.Fuzz(func(t *testing.T, data []byte) {
		db, _ := newTestDB(t)
		p := &program{data: data}
		committed := model{}

		var tr *txn
		var local model // the transaction's view: its snapshot and its writes
		var ops []fuzzOp
		var reads readSet
		var concurrent []fuzzOp // writes committed by others since tr began
		start := func() {
			tr = begin(t, db)
			if _, err := tr.GetReadVersion().Get(); err != nil {
				t.Fatal(err)
			}
			local, ops = committed.clone(), nil
			reads, concurrent = readSet{sure: map[string]bool{}}, nil
		}
		start()
		// An old transaction whose snapshot must never change.
		old, oldModel := begin(t, db), model{}
		old.GetReadVersion().Get()

		commit := func() {
			// What the model says of a conflict: certain when another
			// client wrote a key this one read before writing it; excluded
			// when no other write touched anything it read.
			must, may := false, false
			for _, o := range concurrent {
				for k := range reads.sure {
					must = must || hits(o, k, k+"\x00")
				}
				for _, r := range reads.maybe {
					may = may || hits(o, r[0], r[1])
				}
			}
			// An empty clear range is no mutation (FDB drops it): a
			// transaction with nothing else commits read-only, unchecked.
			writes := false
			for _, o := range ops {
				writes = writes || o.kind != 'R' || o.key < o.end
			}
			err := tr.Commit()
			if !writes && isCode(err, 1020) {
				t.Fatal("a read-only commit conflicted")
			}
			switch {
			case err == nil:
				if must && writes {
					t.Fatalf("commit succeeded although another client wrote a key it read (reads %v, other writes %v)", reads.sure, concurrent)
				}
				for _, o := range ops {
					committed.apply(o)
				}
			case isCode(err, 1020):
				if !may {
					t.Fatalf("commit conflicted although no other write touched what it read (reads %v, other writes %v)", reads.maybe, concurrent)
				}
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
			reads.written = append(reads.written, o)
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
				} else {
					reads.maybe = append(reads.maybe, [2]string{b, e})
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
				if !reads.writtenHere(k) {
					reads.sure[k] = true
				}
				reads.maybe = append(reads.maybe, [2]string{k, k + "\x00"})
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
				concurrent = append(concurrent, o)
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
