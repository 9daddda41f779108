package ui_test

import (
	"regexp"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
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
