package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/memkv"
)

// A snapshot is the embedded engine's whole key space in a file, so that a
// CLI run in another process can open the queue `quick demo` or `quick ui
// --demo` keeps in memory: the demo saves one every second and when it
// ends, and `quick --snapshot FILE stats` loads it into a fresh memkv.
//
// Why a file, not a server: the CLI's commands are library calls on a
// kv.Database; serving that interface over a socket means a network
// protocol for transactions, ranges and watches, where a file copy is a few
// dozen lines and survives the demo's end (the newcomer looks at what the
// demo left after it stops). The cost is that a snapshot is a copy: no
// worker runs on it, and what a command changes is written back only when
// no demo still saves over the file (then the change is refused, not lost
// silently).
//
// Format: the magic line, a uvarint length and a JSON header, then Keys
// records of a uvarint key length, the key, a uvarint value length and the
// value, in key order, and nothing after. Lengths are bounded by FDB's
// limits, so a damaged file is an error, not an allocation of its claims.

const snapshotMagic = "quickfdb-snapshot 1\n"

// Bounds a decoder holds a file to (FDB's key and value limits).
const (
	snapshotMaxHeader = 64 << 10
	snapshotMaxKey    = 10_000
	snapshotMaxValue  = 100_000
	// snapshotMaxBytes bounds a file the CLI loads into memory.
	snapshotMaxBytes = 1 << 30
)

// snapshotEvery is how often a running demo saves its snapshot.
const snapshotEvery = time.Second

// snapshotHeader says where a snapshot came from and how to read it.
type snapshotHeader struct {
	// Writer is the command that saved it ("quick demo", "quick ui --demo").
	Writer string `json:"writer"`
	PID    int    `json:"pid"`
	// Live is set while the writer runs: it saves over the file again
	// within SaveEveryMs.
	Live        bool  `json:"live"`
	SaveEveryMs int64 `json:"save_every_ms,omitempty"`
	// SavedAt is the wall clock at the save; ClockAt the queue's clock
	// then (the demo's clock runs ahead of the wall clock while it
	// fast-forwards), so a reader shows ages as the demo saw them.
	SavedAt time.Time `json:"saved_at"`
	ClockAt time.Time `json:"clock_at"`
	// Subspace is the queue's subspace in --subspace syntax.
	Subspace string `json:"subspace"`
	Keys     int    `json:"keys"`
}

// stillWritten reports whether the snapshot's writer saves over it again:
// it said it was live, and its last save is recent (a demo killed with
// SIGKILL leaves Live set; after a few missed saves the file is its own).
func (h snapshotHeader) stillWritten(now time.Time) bool {
	every := time.Duration(h.SaveEveryMs) * time.Millisecond
	return h.Live && now.Sub(h.SavedAt) < 3*every+2*time.Second
}

// defaultSnapshotPath is where the demos save their queue unless told
// otherwise: one file per user in the temporary directory.
func defaultSnapshotPath() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("quick-demo-%d.snapshot", os.Getuid()))
}

// saveSnapshot writes db's key space to path, atomically (a temporary file
// renamed over it), so a reader never sees half a file.
//
// Keys: every key of db, in one read transaction (a consistent copy; the
// demo's database holds a few thousand keys).
func saveSnapshot(ctx context.Context, db kv.Database, path string, h snapshotHeader) error {
	var kvs []kv.KeyValue
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		kvs, err = tr.GetRange(kv.KeyRange{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{}).GetSliceWithError()
		return err
	})
	if err != nil {
		return fmt.Errorf("read the queue to save it: %w", err)
	}
	h.Keys = len(kvs)
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, h, kvs); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".quick-snapshot-*")
	if err != nil {
		return fmt.Errorf("save the snapshot: %w", err)
	}
	_, werr := f.Write(buf.Bytes())
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("save the snapshot: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("save the snapshot: %w", err)
	}
	return nil
}

func encodeSnapshot(w io.Writer, h snapshotHeader, kvs []kv.KeyValue) error {
	hj, err := json.Marshal(h)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(snapshotMagic)
	var n [binary.MaxVarintLen64]byte
	put := func(b []byte) {
		bw.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		bw.Write(b)
	}
	put(hj)
	for _, e := range kvs {
		put(e.Key)
		put(e.Value)
	}
	return bw.Flush()
}

// errBadSnapshot marks a file that is not a snapshot, or a damaged one.
var errBadSnapshot = errors.New("not a quickfdb snapshot")

// decodeSnapshot reads a snapshot, holding every length to its bound.
func decodeSnapshot(r io.Reader) (snapshotHeader, []kv.KeyValue, error) {
	var h snapshotHeader
	br := bufio.NewReader(r)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return h, nil, fmt.Errorf("%w: no %q line at its start", errBadSnapshot, snapshotMagic[:len(snapshotMagic)-1])
	}
	read := func(what string, limit int) ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %s length: %v", errBadSnapshot, what, err)
		}
		if n > uint64(limit) {
			return nil, fmt.Errorf("%w: %s of %d bytes, over %d", errBadSnapshot, what, n, limit)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("%w: %s cut short: %v", errBadSnapshot, what, err)
		}
		return b, nil
	}
	hj, err := read("header", snapshotMaxHeader)
	if err != nil {
		return h, nil, err
	}
	if err := json.Unmarshal(hj, &h); err != nil {
		return h, nil, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	if h.Keys < 0 || h.Keys > snapshotMaxBytes/2 {
		return h, nil, fmt.Errorf("%w: header says %d keys", errBadSnapshot, h.Keys)
	}
	kvs := make([]kv.KeyValue, 0, min(h.Keys, 1<<16))
	for i := range h.Keys {
		k, err := read(fmt.Sprintf("key %d", i), snapshotMaxKey)
		if err != nil {
			return h, nil, err
		}
		v, err := read(fmt.Sprintf("value %d", i), snapshotMaxValue)
		if err != nil {
			return h, nil, err
		}
		if i > 0 && bytes.Compare(kvs[i-1].Key, k) >= 0 {
			return h, nil, fmt.Errorf("%w: key %d out of order", errBadSnapshot, i)
		}
		kvs = append(kvs, kv.KeyValue{Key: k, Value: v})
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return h, nil, fmt.Errorf("%w: bytes after its %d keys", errBadSnapshot, h.Keys)
	}
	return h, kvs, nil
}

// loadSnapshot reads the snapshot at path into a new memkv database.
//
// Keys: every key of the file, written in transactions of at most 1,000
// keys and 4 MB (FDB's bounds, which memkv holds too).
func loadSnapshot(ctx context.Context, path string) (*memkv.DB, snapshotHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, snapshotHeader{}, fmt.Errorf("open snapshot: %w", err)
	}
	defer f.Close()
	h, kvs, err := decodeSnapshot(io.LimitReader(f, snapshotMaxBytes))
	if err != nil {
		return nil, h, fmt.Errorf("snapshot %s: %w", path, err)
	}
	db := memkv.Open(memkv.Options{})
	for len(kvs) > 0 {
		n, size := 0, 0
		for n < len(kvs) && n < 1000 && size < 4<<20 {
			size += len(kvs[n].Key) + len(kvs[n].Value)
			n++
		}
		batch := kvs[:n]
		kvs = kvs[n:]
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			for _, e := range batch {
				tr.Set(e.Key, e.Value)
			}
			return nil
		}); err != nil {
			db.Close()
			return nil, h, fmt.Errorf("load snapshot %s: %w", path, err)
		}
	}
	return db, h, nil
}

// snapshotSaver saves a running demo's database every snapshotEvery, and a
// last time, not live, when it stops. A failed save is reported once and
// the demo goes on: the snapshot is for looking, not for the demo's work.
type snapshotSaver struct {
	db       kv.Database
	path     string
	writer   string
	subspace string
	clk      clock.Clock
	warn     func(error)

	stop chan struct{}
	done chan struct{}
}

func startSnapshotSaver(db kv.Database, path, writer, subspace string, clk clock.Clock, warn func(error)) *snapshotSaver {
	s := &snapshotSaver{db: db, path: path, writer: writer, subspace: subspace, clk: clk, warn: warn,
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		warned := false
		t := time.NewTicker(snapshotEvery)
		defer t.Stop()
		for {
			if err := s.save(true); err != nil && !warned {
				warned = true
				s.warn(err)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *snapshotSaver) save(live bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return saveSnapshot(ctx, s.db, s.path, snapshotHeader{
		Writer: s.writer, PID: os.Getpid(), Live: live, SaveEveryMs: snapshotEvery.Milliseconds(),
		SavedAt: time.Now(), ClockAt: s.clk.Now(), Subspace: s.subspace,
	})
}

// Stop ends the periodic saves and writes the last snapshot, not live.
func (s *snapshotSaver) Stop() error {
	close(s.stop)
	<-s.done
	return s.save(false)
}

// offsetClock is a clock shifted by a constant: a snapshot's reader runs
// on the demo's clock as it stood at the save, plus the time since.
type offsetClock struct {
	clock.Clock
	offset time.Duration
}

func (c offsetClock) Now() time.Time { return c.Clock.Now().Add(c.offset) }

// errSnapshotLive is a change refused because a demo still saves over the
// snapshot it was made on.
var errSnapshotLive = errors.New("the snapshot is still being saved over")

// readOnlyDB refuses to commit a transaction that writes: the CLI's view
// of a snapshot a running demo still saves over, where a change would be
// lost at the demo's next save without a word.
type readOnlyDB struct {
	kv.Database
	why string
}

func (d readOnlyDB) refuse() error { return fmt.Errorf("%w: %s", errSnapshotLive, d.why) }

func (d readOnlyDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	return d.Database.Transact(ctx, func(tr kv.Transaction) error {
		w := &readOnlyTx{Transaction: tr, db: d}
		if err := fn(w); err != nil {
			return err
		}
		if w.wrote {
			return d.refuse()
		}
		return nil
	})
}

func (d readOnlyDB) CreateTransaction() (kv.Transaction, error) {
	tr, err := d.Database.CreateTransaction()
	if err != nil {
		return nil, err
	}
	return &readOnlyTx{Transaction: tr, db: d}, nil
}

// readOnlyTx notes a write (and makes it, so the command reads its own
// writes as on any database) and fails the commit that would apply it.
type readOnlyTx struct {
	kv.Transaction
	db    readOnlyDB
	wrote bool
}

func (t *readOnlyTx) Commit() error {
	if t.wrote {
		return t.db.refuse()
	}
	return t.Transaction.Commit()
}

func (t *readOnlyTx) Set(k, v []byte)          { t.wrote = true; t.Transaction.Set(k, v) }
func (t *readOnlyTx) Clear(k []byte)           { t.wrote = true; t.Transaction.Clear(k) }
func (t *readOnlyTx) ClearRange(r kv.KeyRange) { t.wrote = true; t.Transaction.ClearRange(r) }
func (t *readOnlyTx) Add(k, p []byte)          { t.wrote = true; t.Transaction.Add(k, p) }
func (t *readOnlyTx) Max(k, p []byte)          { t.wrote = true; t.Transaction.Max(k, p) }
func (t *readOnlyTx) Min(k, p []byte)          { t.wrote = true; t.Transaction.Min(k, p) }
func (t *readOnlyTx) CompareAndClear(k, p []byte) {
	t.wrote = true
	t.Transaction.CompareAndClear(k, p)
}
func (t *readOnlyTx) Atomic(op kv.MutationType, k, p []byte) {
	t.wrote = true
	t.Transaction.Atomic(op, k, p)
}
func (t *readOnlyTx) SetVersionstampedKey(k, v []byte) {
	t.wrote = true
	t.Transaction.SetVersionstampedKey(k, v)
}
func (t *readOnlyTx) SetVersionstampedValue(k, v []byte) {
	t.wrote = true
	t.Transaction.SetVersionstampedValue(k, v)
}

// openSnapshot loads the snapshot at path for this run: its queue runs on
// the clock the demo had at the save (plus the time since), and while its
// demo still saves over it, a command that would change it is refused.
func (a *app) openSnapshot(ctx context.Context, path string) (kv.Database, error) {
	mem, h, err := loadSnapshot(ctx, path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w (run quick demo first: it saves its queue there and prints where)", err)
		}
		return nil, err
	}
	a.close = append(a.close, func() { mem.Close() })
	base := a.d.Clock // the wall clock SavedAt was read on
	a.d.Clock = offsetClock{Clock: base, offset: h.ClockAt.Sub(h.SavedAt)}
	s := &openSnapshot{path: path, header: h, db: mem, wall: base}
	var db kv.Database = mem
	if h.stillWritten(base.Now()) {
		s.readOnly = true
		db = readOnlyDB{Database: mem, why: fmt.Sprintf("%s (pid %d) saves its queue over %s every %v; "+
			"run commands that change the queue once it has ended", h.Writer, h.PID, path, time.Duration(h.SaveEveryMs)*time.Millisecond)}
	}
	a.snap = s
	return db, nil
}

// saveSnapshot writes a snapshot the run changed back to its file, as a
// snapshot no demo writes any more.
func (a *app) saveSnapshot() error {
	if a.snap == nil || a.snap.readOnly || a.stats().Mutations == 0 {
		return nil
	}
	h := a.snap.header
	h.Live, h.PID, h.SavedAt, h.ClockAt = false, os.Getpid(), a.snap.wall.Now(), a.d.Clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := saveSnapshot(ctx, a.snap.db, a.snap.path, h); err != nil {
		return fmt.Errorf("the change is lost: %w", err)
	}
	return nil
}
