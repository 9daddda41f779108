package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// Harness is what a case needs from an engine.
type Harness struct {
	DB      kv.Database
	Prefix  []byte                // a fresh, empty keyspace for this case; every key the case touches lies under it
	Advance func(d time.Duration) // moves the engine's clock forward by d (memkv: manual clock; FDB: sleeps)
	Engine  string                // "memkv" or "fdb"
}

// Case is one FDB behaviour every engine must reproduce.
type Case struct {
	Name string // e.g. "conflict/range/limited-forward"
	Rule string // the FDB rule it pins, one sentence, with its source
	Slow bool   // needs Advance of several seconds (on FDB: real sleeping)
	// Run returns a descriptive error on a violation. It takes no testing.T,
	// so that a deliberately broken engine can be shown to fail.
	Run func(ctx context.Context, h Harness) error
}

// Cases returns the whole conformance table.
func Cases() []Case {
	var all []Case
	for _, group := range [][]Case{
		conflictCases(),
		rywCases(),
		atomicCases(),
		versionstampCases(),
		watchCases(),
		versionCases(),
		windowCases(),
		limitCases(),
		rangeCases(),
		retryCases(),
		idempotencyCases(),
		txCases(),
		concurrencyCases(),
	} {
		all = append(all, group...)
	}
	return all
}

// caseTimeout bounds one case so that a hung engine fails instead of hanging
// the test binary.
const (
	caseTimeout     = 60 * time.Second
	slowCaseTimeout = 5 * time.Minute
)

// Run runs every case as a subtest, each with a fresh Harness from
// newHarness; it skips Slow cases under -short.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.Slow && testing.Short() {
				t.Skip("slow case skipped under -short")
			}
			h := newHarness(t)
			timeout := caseTimeout
			if c.Slow {
				timeout = slowCaseTimeout
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := c.Run(ctx, h); err != nil {
				t.Fatalf("%v\nrule: %s", err, c.Rule)
			}
		})
	}
}

// ---- helpers shared by the cases ----

// key returns h.Prefix followed by parts, in a fresh slice.
func key(h Harness, parts ...string) []byte {
	out := make([]byte, 0, len(h.Prefix)+16)
	out = append(out, h.Prefix...)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// rng returns the range [prefix+begin, prefix+end).
func rng(h Harness, begin, end string) kv.KeyRange {
	return kv.KeyRange{Begin: key(h, begin), End: key(h, end)}
}

// marker is the key the first transaction of an interleaving writes so that it
// is not read-only. No case reads it.
func marker(h Harness) []byte { return key(h, "~marker") }

func newTx(h Harness) (kv.Transaction, error) {
	tr, err := h.DB.CreateTransaction()
	if err != nil {
		return nil, fmt.Errorf("CreateTransaction: %w", err)
	}
	return tr, nil
}

func get(tr kv.ReadTransaction, k []byte) ([]byte, error) {
	return tr.Get(k).Get()
}

func grv(tr kv.ReadTransaction) (int64, error) {
	return tr.GetReadVersion().Get()
}

// seed writes pairs (suffix, value, suffix, value, ...) under h.Prefix in one
// committed transaction.
func seed(h Harness, pairs ...string) error {
	if len(pairs)%2 != 0 {
		panic("seed: odd number of arguments")
	}
	tr, err := newTx(h)
	if err != nil {
		return err
	}
	for i := 0; i < len(pairs); i += 2 {
		tr.Set(key(h, pairs[i]), []byte(pairs[i+1]))
	}
	if err := tr.Commit(); err != nil {
		return fmt.Errorf("seeding: commit: %w", err)
	}
	return nil
}

// commitWith runs f in a fresh transaction and commits it.
func commitWith(h Harness, f func(tr kv.Transaction)) error {
	tr, err := newTx(h)
	if err != nil {
		return err
	}
	f(tr)
	if err := tr.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// readKey reads k in a fresh transaction.
func readKey(h Harness, k []byte) ([]byte, error) {
	tr, err := newTx(h)
	if err != nil {
		return nil, err
	}
	v, err := get(tr, k)
	if err != nil {
		return nil, fmt.Errorf("reading %q in a new transaction: %w", k, err)
	}
	return v, nil
}

// readRange reads r in a fresh transaction.
func readRange(h Harness, r kv.KeyRange) ([]kv.KeyValue, error) {
	tr, err := newTx(h)
	if err != nil {
		return nil, err
	}
	kvs, err := tr.GetRange(r, kv.RangeOptions{}).GetSliceWithError()
	if err != nil {
		return nil, fmt.Errorf("reading range in a new transaction: %w", err)
	}
	return kvs, nil
}

// expectCode checks that err carries the FDB code of want.
func expectCode(what string, err error, want kv.Error) error {
	if err == nil {
		return fmt.Errorf("%s: got no error, want %v", what, want)
	}
	if !errors.Is(err, want) {
		return fmt.Errorf("%s: got error %v, want %v", what, err, want)
	}
	return nil
}

// expectNoErr wraps a non-nil err with what.
func expectNoErr(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: unexpected error: %w", what, err)
	}
	return nil
}

// expectValue compares a value read with want; want nil means the key must be
// absent (a nil slice), and a non-nil want requires a non-nil result.
func expectValue(what string, got, want []byte) error {
	if want == nil {
		if got != nil {
			return fmt.Errorf("%s: got %s, want absent (nil)", what, show(got))
		}
		return nil
	}
	if got == nil {
		return fmt.Errorf("%s: got absent (nil), want %s", what, show(want))
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: got %s, want %s", what, show(got), show(want))
	}
	return nil
}

// expectStored reads k in a new transaction and compares it with want.
func expectStored(h Harness, what string, k []byte, want []byte) error {
	v, err := readKey(h, k)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return expectValue(what, v, want)
}

// expectPairs compares range results with want, given as (suffix, value)
// pairs under h.Prefix.
func expectPairs(h Harness, what string, got []kv.KeyValue, want ...string) error {
	exp := make([]kv.KeyValue, 0, len(want)/2)
	for i := 0; i+1 < len(want); i += 2 {
		exp = append(exp, kv.KeyValue{Key: key(h, want[i]), Value: []byte(want[i+1])})
	}
	if len(got) != len(exp) {
		return fmt.Errorf("%s: got %s, want %s", what, showPairs(h, got), showPairs(h, exp))
	}
	for i := range got {
		if !bytes.Equal(got[i].Key, exp[i].Key) || !bytes.Equal(got[i].Value, exp[i].Value) {
			return fmt.Errorf("%s: got %s, want %s", what, showPairs(h, got), showPairs(h, exp))
		}
	}
	return nil
}

func show(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) > 40 {
		return fmt.Sprintf("%d bytes %x...", len(b), b[:20])
	}
	printable := true
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			printable = false
			break
		}
	}
	if printable {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("0x%x", b)
}

func showPairs(h Harness, kvs []kv.KeyValue) string {
	var b bytes.Buffer
	b.WriteString("[")
	for i, p := range kvs {
		if i > 0 {
			b.WriteString(" ")
		}
		k := p.Key
		if bytes.HasPrefix(k, h.Prefix) {
			k = k[len(h.Prefix):]
		}
		fmt.Fprintf(&b, "%s=%s", show(k), show(p.Value))
	}
	b.WriteString("]")
	return b.String()
}

// interleave runs the canonical two-transaction schedule:
//
//	txA := new; reads(txA)          // takes txA's read version and its conflict ranges
//	txB := new; write(txB); commit  // must succeed
//	txA.Set(marker); txA.Commit()   // returned as commitA
//
// err reports a failure of the schedule itself.
func interleave(h Harness, reads func(txA kv.Transaction) error, write func(txB kv.Transaction) error) (commitA error, err error) {
	txA, err := newTx(h)
	if err != nil {
		return nil, err
	}
	if err := reads(txA); err != nil {
		return nil, fmt.Errorf("txA reads: %w", err)
	}
	txB, err := newTx(h)
	if err != nil {
		return nil, err
	}
	if err := write(txB); err != nil {
		return nil, fmt.Errorf("txB writes: %w", err)
	}
	if err := txB.Commit(); err != nil {
		return nil, fmt.Errorf("txB commit: %w", err)
	}
	txA.Set(marker(h), []byte("A"))
	return txA.Commit(), nil
}

// expectConflict runs interleave and requires txA's commit to fail with 1020.
func expectConflict(h Harness, reads func(kv.Transaction) error, write func(kv.Transaction) error) error {
	cerr, err := interleave(h, reads, write)
	if err != nil {
		return err
	}
	if !errors.Is(cerr, kv.ErrNotCommitted) {
		return fmt.Errorf("txA commit after txB's conflicting commit: got %v, want 1020 not_committed", cerr)
	}
	return nil
}

// expectNoConflict runs interleave and requires txA's commit to succeed.
func expectNoConflict(h Harness, reads func(kv.Transaction) error, write func(kv.Transaction) error) error {
	cerr, err := interleave(h, reads, write)
	if err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("txA commit after txB's non-conflicting commit: got %v, want success", cerr)
	}
	return nil
}

// setKey returns a write step that sets prefix+suffix.
func setKey(h Harness, suffix, value string) func(kv.Transaction) error {
	return func(tr kv.Transaction) error {
		tr.Set(key(h, suffix), []byte(value))
		return nil
	}
}

// readPoint returns a read step that reads prefix+suffix.
func readPoint(h Harness, suffix string) func(kv.Transaction) error {
	return func(tr kv.Transaction) error {
		_, err := get(tr, key(h, suffix))
		return err
	}
}

// le returns b unchanged; it documents that a byte literal is a little-endian
// integer.
func le(b ...byte) []byte { return b }

// waitFor waits on w for at most d and returns Wait's error.
func waitFor(ctx context.Context, w kv.Watch, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return w.Wait(wctx)
}
