package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// quick tenants move/adopt/delete/ops: a dry run changes nothing, a move
// carries the tenant's jobs to the other queue (found there by ID), a
// delete removes them, and bad flags say what is wrong.
func TestTenantsMoveAdoptDeleteCommands(t *testing.T) {
	h := newHarness(t)
	f := h.fill()
	ctx := context.Background()
	var acme quick.ID // a job of tenant acme (i < 20) not dead-lettered
	for _, id := range f.email[:20] {
		dead := false
		for _, d := range f.dead {
			dead = dead || d == id
		}
		if !dead {
			acme = id
			break
		}
	}
	globex := f.email[25]
	out := h.ok("tenants", "move", "--tenant", "acme", "--type", "email", "--to-subspace", "moved", "--dry-run")
	for _, w := range []string{"TYPE", "email", "dry run: would move to subspace moved the zones of tenant acme"} {
		if !contains(out, w) {
			t.Fatalf("dry run output lacks %q:\n%s", w, out)
		}
	}
	if _, err := h.queue().Get(ctx, acme); err != nil {
		t.Fatalf("the dry run moved the job: %v", err)
	}
	h.fails("needs a destination", "tenants", "move", "--tenant", "acme")
	h.fails("invalid --batch 0", "tenants", "move", "--tenant", "acme", "--to-subspace", "moved", "--batch", "0")
	h.failsIn("no\n", "aborted", "tenants", "move", "--tenant", "acme", "--to-subspace", "moved")
	out = h.ok("tenants", "move", "--tenant", "acme", "--type", "email", "--to-subspace", "moved", "--yes")
	// 18: two of acme's 20 are dead letters, which stay in the queue's
	// shared state.
	if !contains(out, "moved tenant acme to subspace moved: 18 jobs of 1 task types") {
		t.Fatalf("move output:\n%s", out)
	}
	dst, err := quick.Open(ctx, h.db, tuple.FromTuple(tuple.Tuple{"moved"}), quick.Options{Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := dst.Get(ctx, acme); err != nil || info.ItemSpace != "acme" {
		t.Fatalf("moved job at the destination: %+v, %v", info, err)
	}
	if _, err := h.queue().Get(ctx, acme); !errors.Is(err, quick.ErrNotFound) {
		t.Fatalf("moved job at the source: %v, want ErrNotFound", err)
	}
	// Adopting the moved zones again changes nothing and says so.
	out = h.ok("--subspace", "moved", "tenants", "adopt", "--tenant", "acme", "--type", "email")
	if !contains(out, "adopted tenant acme: 18 jobs of 1 task types are claimable") {
		t.Fatalf("adopt output:\n%s", out)
	}
	out = h.ok("tenants", "delete", "--tenant", "globex", "--yes")
	if !contains(out, "deleted tenant globex: 10 jobs") {
		t.Fatalf("delete output:\n%s", out)
	}
	if _, err := h.queue().Get(ctx, globex); !errors.Is(err, quick.ErrNotFound) {
		t.Fatalf("deleted job: %v, want ErrNotFound", err)
	}
	if out := h.ok("tenants", "ops"); !contains(out, "no tenant operation under way") {
		t.Fatalf("ops output:\n%s", out)
	}
	h.fails("--cancel-tenant needs --type", "tenants", "ops", "--cancel-tenant", "acme")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
