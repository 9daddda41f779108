package worker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/quick"
)

// One scanner per runner: of a worker's claims, only one at a time reads
// the pointer index (the scanner's, one after another), and the executors
// claim the lanes it saw without reading the index.
func TestScannerAloneReadsTheIndex(t *testing.T) {
	raw, space := fdbtest.Open(t)
	tdb := &traceDB{inner: raw, space: space}
	e := newEnvOn(t, tdb, space, quick.Options{})
	const zones = 12
	w := e.newWorker(Config{ID: "w"}, func(w *Worker) {
		if err := RegisterRaw(w, "email", func(context.Context, *RawJob) error { return nil }, HandlerOptions{Concurrency: 8}); err != nil {
			t.Fatal(err)
		}
	})
	e.start(w)
	e.settle(w) // the executors wait for the scanner
	r := w.snapshotRunners()[0]
	e.waitFor("the executors to wait for the scanner", func() bool { return int(r.feed.waiting.Load()) == claimers-1 })
	tdb.reset()
	var jobs []quick.NewJob
	for i := range zones {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: fmt.Sprint("t", i)})
	}
	e.enqueue(jobs...)
	e.waitFor("every job to run", func() bool { return w.Stats().Completed == zones })
	e.settle(w)
	var scans, fromClaims []*traceTx
	for _, tx := range tdb.take() {
		var all strings.Builder
		for _, ev := range tx.events() {
			all.WriteString(ev.what + ";")
		}
		switch s := all.String(); {
		case strings.Contains(s, "range (2,p,"):
			scans = append(scans, tx)
		case strings.Contains(s, "get (2,p,") && strings.Contains(s, "clear (2,z,"):
			fromClaims = append(fromClaims, tx) // a lane a scan saw, claimed
		}
	}
	slices.SortFunc(scans, func(a, b *traceTx) int { return a.first().Compare(b.first()) })
	for i := 1; i < len(scans); i++ {
		if scans[i].first().Before(scans[i-1].last()) {
			t.Fatalf("two claims read the pointer index at once (transactions %d and %d): more than one scanner", scans[i-1].id, scans[i].id)
		}
	}
	if len(fromClaims) == 0 {
		t.Fatalf("no claim took a lane a scan saw (%d index reads for %d zones): the executors read the index themselves", len(scans), zones)
	}
}

// The feed remembers the candidates it handed to executors until their
// claims return, and the scanner's next claim skips them
// (quick.ClaimOptions.Skip), so the scanner never races its own executor
// for a lane; a candidate no executor took is not remembered.
func TestScannerSkipsCandidatesHandedOut(t *testing.T) {
	r := &runner{feed: newScanFeed()}
	c := &claimer{r: r}
	r.feed.waiting.Store(1) // one executor waits
	a := quick.LaneCandidate{TaskType: "email", ItemSpace: "a", Lane: 0}
	b := quick.LaneCandidate{TaskType: "email", ItemSpace: "b", Lane: 3}
	c.distribute(quick.Claimed{Candidates: []quick.LaneCandidate{a, b}})
	got := r.feed.skip()
	if len(got) != 1 || got[0].ItemSpace != "a" {
		t.Fatalf("skip after handing out one of two candidates = %+v, want a's lane", got)
	}
	it := <-r.feed.ch
	if it.cand == nil || it.cand.ItemSpace != "a" {
		t.Fatalf("the executor got %+v", it)
	}
	r.feed.settle(it.cand) // its claim returned
	if got := r.feed.skip(); len(got) != 0 {
		t.Fatalf("skip after the claim returned = %+v", got)
	}
}
