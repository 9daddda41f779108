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
