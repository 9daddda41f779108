package ui

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/internal/present"
	"github.com/quickfdb/quickfdb/lanes"
	"github.com/quickfdb/quickfdb/quick"
)

// staleAfter is how old a heartbeat (by the wall clock the worker wrote)
// may be before the page calls it stale: a few of the default 2 s periods.
const staleAfter = 10 * time.Second

// runningScan bounds the leased jobs read per task type to see what each
// worker runs.
const runningScan = 500

type workerRow struct {
	TaskType  string
	ID        string
	Host      string
	Lanes     string
	NumLanes  int
	Beats     uint64
	LastBeat  time.Time
	Status    string
	InfoError string
	Running   []quick.ID
	More      int
}

type workersData struct {
	Rows    []workerRow
	Partial []string // task types whose leased jobs exceeded the scan
}

// workersPage reads the lanes registry (one snapshot per task type) and,
// to show what each worker runs, the leased jobs of each type
// (quick.Queue.List with State leased: at most runningScan keys).
func (h *Handler) workersPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	types, err := h.reg.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	slices.Sort(types)
	now := h.now()
	var d workersData
	for _, t := range types {
		members, err := h.reg.Snapshot(ctx, t)
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		held := map[string][]quick.ID{}
		if len(members) > 0 {
			page, err := h.q.List(ctx, quick.ListOptions{TaskType: t, State: quick.StateLeased, Limit: runningScan})
			if err != nil {
				h.fail(w, r, statusOf(err), err)
				return
			}
			for _, j := range page.Jobs {
				held[j.Holder] = append(held[j.Holder], j.ID)
			}
			if page.Next != "" {
				d.Partial = append(d.Partial, t)
			}
		}
		slices.SortFunc(members, func(a, b lanes.Member) int { return strings.Compare(a.ID, b.ID) })
		for _, m := range members {
			row := workerRow{TaskType: t, ID: m.ID, Host: m.Info.Host, Lanes: present.LaneList(m.Info.Lanes), NumLanes: m.Info.NumLanes,
				Beats: m.Counter, LastBeat: m.Clock}
			if m.InfoErr != nil {
				row.InfoError = m.InfoErr.Error()
			}
			switch {
			case m.Clock.IsZero():
				row.Status = "unknown"
			case now.Sub(m.Clock) > staleAfter:
				row.Status = "stale"
			default:
				row.Status = "ok"
			}
			ids := held[m.ID]
			if len(ids) > 8 {
				row.More = len(ids) - 8
				ids = ids[:8]
			}
			row.Running = ids
			d.Rows = append(d.Rows, row)
		}
	}
	h.render(w, r, http.StatusOK, "workers", "Workers", true, d)
}
