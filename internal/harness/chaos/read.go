package chaos

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/quickfdb/quickfdb/cron"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// pageKeys bounds the keys one read transaction of the final state reads.
const pageKeys = 1000

// scan reads every key of prefix in transactions of at most pageKeys keys
// each, going on from the last key read.
func scan(ctx context.Context, db kv.Database, prefix tuple.Subspace, fn func(kv.KeyValue) error) error {
	begin, end := prefix.Range()
	for {
		var page []kv.KeyValue
		err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			page, err = tr.GetRange(kv.KeyRange{Begin: begin, End: end}, kv.RangeOptions{Limit: pageKeys}).GetSliceWithError()
			return err
		})
		if err != nil {
			return err
		}
		for _, p := range page {
			if err := fn(p); err != nil {
				return err
			}
		}
		if len(page) < pageKeys {
			return nil
		}
		begin = append(append([]byte(nil), page[len(page)-1].Key...), 0)
	}
}

// DoneRec is a completion record read back.
type DoneRec struct {
	ID    quick.ID
	Token uint64
	Done
}

// Records are the app records of a run.
type Records struct {
	Enq   map[quick.ID]Enq
	Done  []DoneRec
	Count map[quick.ID]int64
	Total int64
	Bad   []string
}

var errBadKey = errors.New("chaos: a record key of an unexpected shape")

func idOf(v any) (quick.ID, error) {
	b, ok := v.([]byte)
	if !ok || len(b) != len(quick.ID{}) {
		return quick.ID{}, errBadKey
	}
	return quick.ID(b), nil
}

// readRecords reads A("enq"), A("done"), A("count") and A("total"), paged.
func readRecords(ctx context.Context, db kv.Database, keys Keys) (*Records, error) {
	r := &Records{Enq: map[quick.ID]Enq{}, Count: map[quick.ID]int64{}}
	bad := func(kind string, k []byte, err error) {
		r.Bad = append(r.Bad, fmt.Sprintf("%s record %x: %v", kind, k, err))
	}
	err := scan(ctx, db, keys.App.Sub("enq"), func(p kv.KeyValue) error {
		t, err := keys.App.Sub("enq").Unpack(p.Key)
		if err != nil || len(t) != 1 {
			bad("enq", p.Key, errors.Join(err, errBadKey))
			return nil
		}
		id, err := idOf(t[0])
		var e Enq
		if err == nil {
			err = json.Unmarshal(p.Value, &e)
		}
		if err != nil {
			bad("enq", p.Key, err)
			return nil
		}
		r.Enq[id] = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = scan(ctx, db, keys.App.Sub("done"), func(p kv.KeyValue) error {
		t, err := keys.App.Sub("done").Unpack(p.Key)
		if err != nil || len(t) != 3 {
			bad("done", p.Key, errors.Join(err, errBadKey))
			return nil
		}
		id, err := idOf(t[0])
		tok, ok := t[1].(int64)
		var d Done
		if err == nil && !ok {
			err = errBadKey
		}
		if err == nil {
			err = json.Unmarshal(p.Value, &d)
		}
		if err != nil {
			bad("done", p.Key, err)
			return nil
		}
		r.Done = append(r.Done, DoneRec{ID: id, Token: uint64(tok), Done: d})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, kind := range []string{"count", "total"} {
		sub := keys.App.Sub(kind)
		err = scan(ctx, db, sub, func(p kv.KeyValue) error {
			t, err := sub.Unpack(p.Key)
			if err != nil || len(t) != 1 || len(p.Value) != 8 {
				bad(kind, p.Key, errors.Join(err, errBadKey))
				return nil
			}
			n := int64(binary.LittleEndian.Uint64(p.Value))
			if kind == "total" {
				r.Total += n
				return nil
			}
			id, err := idOf(t[0])
			if err != nil {
				bad(kind, p.Key, err)
				return nil
			}
			r.Count[id] = n
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readTotal reads the finished-jobs counter: TotalShards point reads.
func readTotal(ctx context.Context, db kv.Database, keys Keys) (int64, error) {
	var n int64
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		n = 0
		futs := make([]kv.Future[[]byte], TotalShards)
		for i := range futs {
			futs[i] = tr.Get(keys.Total(i))
		}
		for _, f := range futs {
			v, err := f.Get()
			if err != nil {
				return err
			}
			if len(v) == 8 {
				n += int64(binary.LittleEndian.Uint64(v))
			}
		}
		return nil
	})
	return n, err
}

// readMarkers reads the marker of every batch, 100 point reads a
// transaction.
func readMarkers(ctx context.Context, db kv.Database, keys Keys, batches []*BatchRec) error {
	for len(batches) > 0 {
		chunk := batches[:min(100, len(batches))]
		batches = batches[len(chunk):]
		err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			futs := make([]kv.Future[[]byte], len(chunk))
			for i, b := range chunk {
				futs[i] = tr.Get(keys.Batch(b.Producer, b.Batch))
			}
			for i, f := range futs {
				v, err := f.Get()
				if err != nil {
					return err
				}
				b := chunk[i]
				b.Found, b.Marker = v != nil, nil
				if v == nil {
					continue
				}
				t, err := tuple.Unpack(v)
				if err != nil {
					return fmt.Errorf("chaos: batch marker %d/%d: %w", b.Producer, b.Batch, err)
				}
				for _, e := range t {
					id, err := idOf(e)
					if err != nil {
						return fmt.Errorf("chaos: batch marker %d/%d: %w", b.Producer, b.Batch, err)
					}
					b.Marker = append(b.Marker, id)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// CronEntry is where a chain stands at the end (cron.List).
type CronEntry struct {
	Name   string
	Alive  bool
	Next   int64 // unix ms
	NextID quick.ID
}

func readCron(ctx context.Context, q *quick.Queue) ([]CronEntry, error) {
	entries, err := cron.List(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]CronEntry, 0, len(entries))
	for _, e := range entries {
		out = append(out, CronEntry{Name: e.Name, Alive: e.Alive, Next: e.Next.UnixMilli(), NextID: e.NextID})
	}
	return out, nil
}
