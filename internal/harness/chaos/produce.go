package chaos

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// Outcomes of a producer transaction, as the producer saw it.
const (
	Committed = "committed" // Transact returned nil
	Failed    = "failed"    // an error that says it did not commit
	Unknown   = "unknown"   // an error that may have committed (IsMaybeCommitted): the batch marker decides
)

// BatchRec is one producer transaction and what became of it.
type BatchRec struct {
	Producer, Batch int
	// Attempts are the IDs each attempt's EnqueueTx generated (the last
	// attempt's first, then... in order of the attempts); at most one
	// attempt's jobs may exist.
	Attempts [][]quick.ID
	Types    []string // the jobs' task types, by index
	Outcome  string
	Code     int    // the FDB code of the error, if any
	Err      string // the error, if any
	// Done is when the transaction returned (unix ns).
	Done int64
	// Marker is the batch marker read at the end: the IDs of the attempt
	// that committed, if one did (Found).
	Marker []quick.ID
	Found  bool
}

// producers run the run's producers and collect their batches.
type producers struct {
	cfg  Config
	db   kv.Database
	q    *quick.Queue
	keys Keys

	mu      sync.Mutex
	batches []*BatchRec
}

// run enqueues from n producers at cfg.Rate together until ctx ends.
func (p *producers) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range p.cfg.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.produce(ctx, i)
		}()
	}
	wg.Wait()
}

func (p *producers) produce(ctx context.Context, producer int) {
	rng := rand.New(rand.NewPCG(p.cfg.Seed, uint64(producer)+1))
	every := time.Duration(float64(time.Second) * float64(p.cfg.Batch) * float64(p.cfg.Producers) / p.cfg.Rate)
	t := time.NewTicker(every)
	defer t.Stop()
	for b := 0; ; b++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rec := p.batch(ctx, producer, b, rng)
		p.mu.Lock()
		p.batches = append(p.batches, rec)
		p.mu.Unlock()
	}
}

// batch runs one producer transaction: unless the batch's marker shows
// that an earlier attempt committed, it enqueues Batch jobs, writes each
// one's app record beside it, and writes the marker listing their IDs.
// Keys: A("batch", p, b) read and written, Batch jobs' insert keys,
// Batch A("enq", id).
func (p *producers) batch(ctx context.Context, producer, b int, rng *rand.Rand) *BatchRec {
	rec := &BatchRec{Producer: producer, Batch: b}
	jobs := make([]quick.NewJob, p.cfg.Batch)
	enqs := make([][]byte, p.cfg.Batch)
	for i := range jobs {
		tt := p.pick(rng)
		pl := Payload{Producer: producer, Batch: b, Index: i, Ms: p.cfg.JobMs}
		if tt == TypeCkpt {
			pl.Steps = p.cfg.CkptSteps
		}
		payload, _ := json.Marshal(pl)
		jobs[i] = quick.NewJob{TaskType: tt, Payload: payload}
		enqs[i], _ = json.Marshal(Enq{Producer: producer, Batch: b, Index: i, Type: tt})
		rec.Types = append(rec.Types, tt)
	}
	tctx, cancel := context.WithTimeout(ctx, p.cfg.TxTimeout)
	defer cancel()
	marker := p.keys.Batch(producer, b)
	err := p.db.Transact(tctx, func(tr kv.Transaction) error {
		v, err := tr.Get(marker).Get()
		if err != nil {
			return err
		}
		if v != nil {
			return nil // an earlier attempt committed (1021 came back)
		}
		res, err := p.q.EnqueueTx(tr, jobs...)
		if err != nil {
			return err
		}
		ids := make([]quick.ID, len(res))
		var packed tuple.Tuple
		for i, r := range res {
			ids[i] = r.ID
			tr.Set(p.keys.Enq(r.ID), enqs[i])
			packed = append(packed, r.ID[:])
		}
		rec.Attempts = append(rec.Attempts, ids)
		tr.Set(marker, packed.Pack())
		return nil
	})
	rec.Done = time.Now().UnixNano()
	switch {
	case err == nil:
		rec.Outcome = Committed
	case kv.IsMaybeCommitted(err):
		rec.Outcome = Unknown
	default:
		rec.Outcome = Failed
	}
	if err != nil {
		rec.Code, rec.Err = kv.Code(err), err.Error()
	}
	return rec
}

func (p *producers) pick(rng *rand.Rand) string {
	x := rng.Float64()
	switch {
	case x < p.cfg.PoisonShare:
		return TypePoison
	case x < p.cfg.PoisonShare+p.cfg.ShortShare:
		return TypeShort
	case x < p.cfg.PoisonShare+p.cfg.ShortShare+p.cfg.CkptShare:
		return TypeCkpt
	}
	return TypeLease
}

// count is how many transactions the producers have attempted so far.
func (p *producers) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.batches)
}

func (p *producers) all() []*BatchRec {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*BatchRec(nil), p.batches...)
}
