package ui_test

import (
	"encoding/binary"
	"regexp"
	"strconv"
	"testing"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/ui"
)

var limitCellRE = regexp.MustCompile(`(?s)<tr data-tenant="(\w*)">.*?data-k="limit">([^<]*)</td>`)

// The tenants page shows each tenant's limits, and its jobs running
// against its concurrency limit.
func TestTenantsPageShowsLimits(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.fillTenants()
	if err := f.q.SetTenantLimits(f.ctx, "email", "acme", quick.Limits{Concurrency: 2, Rate: 10, Weight: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.Consumer().Claim(f.ctx, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 5}); err != nil {
		t.Fatal(err)
	}
	r := f.get("/tenants?type=email")
	cells := map[string]string{}
	for _, m := range limitCellRE.FindAllStringSubmatch(r.body, -1) {
		cells[m[1]] = m[2]
	}
	if len(cells) != 3 || cells["solo"] != "-" || cells["later"] != "-" {
		t.Fatalf("limit cells %v in\n%s", cells, r.body)
	}
	// The claim took one of acme's lanes (1 to 2 jobs, within the limit)
	// or solo's.
	if a := cells["acme"]; !regexp.MustCompile(`^[012] of 2 running · 10/s · weight 3$`).MatchString(a) {
		t.Fatalf("acme's limit cell %q", a)
	}
}

var startsCellRE = regexp.MustCompile(`(?s)<tr data-tenant="(\w*)">.*?data-k="starts">([^<]*)</td>`)

// The tenants page shows each tenant's start rate over the last minute, as
// the workers counted it (worker/tenantstarts.go, S (1, "tr", ...): written
// here as a worker's round would).
func TestTenantsPageShowsStartRate(t *testing.T) {
	f := newFixture(t, ui.Config{})
	f.fillTenants()
	minute := f.q.Now().Unix()/60 - 1
	if err := f.q.DB().Transact(f.ctx, func(tr kv.Transaction) error {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], 600)
		tr.Set(f.q.Root().Sub("tr").Pack(tuple.Tuple{minute, "email", "acme"}), b[:])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := f.get("/tenants?type=email")
	cells := map[string]string{}
	for _, m := range startsCellRE.FindAllStringSubmatch(r.body, -1) {
		cells[m[1]] = m[2]
	}
	if len(cells) != 3 || cells["solo"] != "0.00" {
		t.Fatalf("starts cells %v in\n%s", cells, r.body)
	}
	// 600 starts over the last minute and the current one's elapsed part:
	// 5 to 10 a second.
	if a, err := strconv.ParseFloat(cells["acme"], 64); err != nil || a < 5 || a > 10 {
		t.Fatalf("acme's start rate %q", cells["acme"])
	}
}
