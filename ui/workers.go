package ui

import (
	"context"
	"net/http"
	"slices"
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
	Cluster   string // in a process serving several clusters (worker.Group)
	TaskTypes string
	Started   time.Time
	LastBeat  time.Time
	Status    string
	Running   []quick.ID
	More      int
}

// processRow is one process of the fleet: its workers summed.
type processRow struct {
	Process   string
	TaskTypes string // every task type its workers handle
	Workers   int
	Running   int // jobs its workers run now (as of their last beats)
	Started   time.Time
	LastBeat  time.Time
	Status    string // the worst of its workers'
	Rows      []workerRow
}

type workersData struct {
	Processes []processRow
	Workers   int
	Max       int
}

// listWorkers is the one place the console reads who works
// (worker.ListWorkers: one range read of at most maxWorkersShown presence
// records).
func (h *Handler) listWorkers(ctx context.Context) ([]worker.Presence, error) {
	return worker.ListWorkers(ctx, h.q, maxWorkersShown)
}

// workersPage: one row per process, its workers summed (task types,
// running jobs, last beat, status), with each worker's row below it; all
// from the presence records (listWorkers).
func (h *Handler) workersPage(w http.ResponseWriter, r *http.Request) {
	ps, err := h.listWorkers(r.Context())
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	now := h.now()
	d := workersData{Max: maxWorkersShown, Workers: len(ps)}
	byProc := map[string]int{}
	for _, p := range ps {
		row := workerRow{ID: p.ID, Process: p.Process, Cluster: p.Cluster, TaskTypes: strings.Join(p.TaskTypes, ", "), Started: p.Started, LastBeat: p.Beat}
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
		i, ok := byProc[p.Process]
		if !ok {
			i = len(d.Processes)
			byProc[p.Process] = i
			d.Processes = append(d.Processes, processRow{Process: p.Process, Started: p.Started, Status: "ok"})
		}
		pr := &d.Processes[i]
		pr.Workers++
		pr.Running += len(p.Running)
		pr.Rows = append(pr.Rows, row)
		if p.Started.Before(pr.Started) {
			pr.Started = p.Started
		}
		if p.Beat.After(pr.LastBeat) {
			pr.LastBeat = p.Beat
		}
		if statusRank[row.Status] > statusRank[pr.Status] {
			pr.Status = row.Status
		}
		var types []string
		if pr.TaskTypes != "" {
			types = strings.Split(pr.TaskTypes, ", ")
		}
		for _, t := range p.TaskTypes {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		slices.Sort(types)
		pr.TaskTypes = strings.Join(types, ", ")
	}
	slices.SortFunc(d.Processes, func(a, b processRow) int { return strings.Compare(a.Process, b.Process) })
	h.render(w, r, http.StatusOK, "workers", "Workers", true, d)
}

// statusRank orders worker statuses, worst last: a process shows its
// worst worker's.
var statusRank = map[string]int{"ok": 0, "unknown": 1, "stale": 2}
