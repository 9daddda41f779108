package ui

import (
	"net/http"

	"github.com/quickfdb/quickfdb/quick"
)

// The zones page: one task type's pointer index (the lanes of tenants'
// zones that hold jobs, in the index's order) and the tenants
// with the most ready work, from ReadyTenants' bounded sample. Two
// transactions per page, whatever the number of tenants.

// zonesShown bounds the pointer entries and sampled lanes of the page.
const (
	zonesPointers = 50
	zonesSample   = 20
)

type zonesData struct {
	Types    []string
	Type     string
	Pointers []quick.PointerInfo
	More     bool
	Tenants  []quick.TenantReady
	Sample   int
}

func (h *Handler) zonesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	types, err := h.q.TaskTypes(ctx)
	if err != nil {
		h.fail(w, r, statusOf(err), err)
		return
	}
	types, _ = capTypes(types)
	d := zonesData{Types: types, Type: typeChoice(r.URL.Query().Get("type"), types), Sample: zonesSample}
	if d.Type != "" {
		page, err := h.q.Pointers(ctx, quick.PointersOptions{TaskType: d.Type, Limit: zonesPointers})
		if err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
		d.Pointers, d.More = page.Pointers, page.Next != ""
		if d.Tenants, err = h.q.ReadyTenants(ctx, quick.ReadyTenantsOptions{TaskType: d.Type, Limit: zonesSample}); err != nil {
			h.fail(w, r, statusOf(err), err)
			return
		}
	}
	h.render(w, r, http.StatusOK, "zones", "Zones", true, d)
}
