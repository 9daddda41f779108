package ui_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/testhook"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/ui"
)

func TestZonesPageShowsPointersAndReadyTenants(t *testing.T) {
	f := newFixture(t, ui.Config{})
	place := testhook.PlaceZone.(func(context.Context, *quick.Queue, quick.NewJob) (quick.ID, error))
	put := func(j quick.NewJob) {
		if _, err := place(context.Background(), f.q, j); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		put(quick.NewJob{TaskType: "email", ItemSpace: "acme"})
	}
	f.clk.Advance(time.Second)
	put(quick.NewJob{TaskType: "email", ItemSpace: "solo"})
	put(quick.NewJob{TaskType: "email", ItemSpace: "later", Delay: time.Hour})
	f.clk.Advance(time.Second)

	r := f.get("/zones?type=email")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	ready := regexp.MustCompile(`<tr data-tenant="(\w+)"><td>\w+</td><td class="n" data-k="ready">(\d+)</td>`).FindAllStringSubmatch(r.body, -1)
	if len(ready) != 2 || ready[0][1] != "acme" || ready[0][2] != "4" || ready[1][1] != "solo" {
		t.Fatalf("ready tenants %v in\n%s", ready, r.body)
	}
	ptrs := regexp.MustCompile(`(?s)<table class="grid" id="pointers">.*?</table>`).FindString(r.body)
	if strings.Count(ptrs, "<tr data-tenant=") != 3 || !strings.Contains(ptrs, "in 59m") {
		t.Fatalf("pointer table:\n%s", ptrs)
	}
	if r := f.get("/zones"); r.status != 200 || !strings.Contains(r.body, `id="pointers"`) {
		t.Fatalf("zones page without a type: %d", r.status)
	}
}

func TestZonesPageOfAnEmptyQueue(t *testing.T) {
	f := newFixture(t, ui.Config{})
	if r := f.get("/zones"); r.status != 200 || !strings.Contains(r.body, "No task types yet") {
		t.Fatalf("empty zones page: %d\n%s", r.status, r.body)
	}
}
