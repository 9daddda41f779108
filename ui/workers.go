package ui

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// staleAfter is how old a heartbeat (by the wall clock the worker wrote)
// may be before the page calls it stale: a few of the default 2 s periods.
const staleAfter = 10 * time.Second

// maxWorkersShown bounds the worker records a page reads.
const maxWorkersShown = 500

// runningShown is how many of a worker's jobs the page links.
const runningShown = 8

type workerRow struct {
	ID        string
	Process   string
	TaskTypes string
	Started   time.Time
	LastBeat  time.Time
	Status    string
	Running   []quick.ID
	More      int
}

type workersData struct {
	Rows []workerRow
	Max  int
}

// listWorkers is the one place the console reads who works
// (worker.ListWorkers: one range read of at most maxWorkersShown presence
// records).
func (h *Handler) listWorkers(ctx context.Context) ([]worker.Presence, error) {
	return worker.ListWorkers(ctx, h.q, maxWorkersShown)
}

// workersPage: one row per worker, from its presence record: the task
// types it runs, the jobs it runs now (at most 64 kept), its last beat.
func (h *Handler) workersPage(w http.ResponseWriter, r *http.Request) {
	ps, err := h.listWorkers(r.Context())
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	now := h.now()
	d := workersData{Max: maxWorkersShown}
	for _, p := range ps {
		row := workerRow{ID: p.ID, Process: p.Process, TaskTypes: strings.Join(p.TaskTypes, ", "), Started: p.Started, LastBeat: p.Beat}
		switch {
		case p.Beat.IsZero():
			row.Status = "unknown"
		case now.Sub(p.Beat) > staleAfter:
			row.Status = "stale"
		default:
			row.Status = "ok"
		}
		ids := p.Running
		if len(ids) > runningShown {
			row.More = len(ids) - runningShown
			ids = ids[:runningShown]
		}
		row.Running = ids
		d.Rows = append(d.Rows, row)
	}
	h.render(w, r, http.StatusOK, "workers", "Workers", true, d)
}
