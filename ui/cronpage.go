package ui

import (
	"net/http"
	"time"

	"github.com/quickfdb/quickfdb/cron"
)

type cronRow struct {
	cron.Entry
	Upcoming []time.Time
	Err      string
}

type cronData struct {
	Rows   []cronRow
	Broken int
}

// cronPage lists the schedules: cron.List (a range read of the definitions,
// a point read per schedule and a quick.Get per live occurrence) and, per
// schedule, cron.NextTimes (computed, no read).
func (h *Handler) cronPage(w http.ResponseWriter, r *http.Request) {
	es, err := cron.List(r.Context(), h.q)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	var d cronData
	now := h.now()
	for _, e := range es {
		row := cronRow{Entry: e}
		if e.Err != nil {
			row.Err = e.Err.Error()
		} else {
			after := now
			if e.Alive && e.Next.After(now) {
				after = e.Next
			}
			row.Upcoming, _ = cron.NextTimes(e.Schedule, after, 3)
		}
		if !e.Alive {
			d.Broken++
		}
		d.Rows = append(d.Rows, row)
	}
	h.render(w, r, http.StatusOK, "cron", "Cron", true, d)
}
