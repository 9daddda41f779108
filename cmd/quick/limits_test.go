package main

import (
	"context"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

func TestTenantsLimitsCommands(t *testing.T) {
	h := newHarness(t)
	h.fill()
	steps := []struct {
		args []string
		want []string // substrings of the output, in order
		fail string   // the error expected instead
	}{
		{args: []string{"tenants", "limits", "get", "--type", "email", "--tenant", "acme"},
			want: []string{"default (email)", "none", "override (acme)", "-", "applies", "none", "none", "1"}},
		{args: []string{"tenants", "limits", "set", "--type", "email", "--concurrency", "20"},
			want: []string{"set the limits of the default of email", "now", "20", "none"}},
		{args: []string{"tenants", "limits", "set", "--type", "email", "--tenant", "acme", "--concurrency", "2", "--rate", "10", "--burst", "5"},
			want: []string{"set the limits of tenant acme of email", "2", "10/s", "5"}},
		// Fields not given keep what is stored.
		{args: []string{"tenants", "limits", "set", "--type", "email", "--tenant", "acme", "--weight", "3"},
			want: []string{"now", "2", "10/s", "5", "3"}},
		{args: []string{"tenants", "limits", "get", "--type", "email", "--tenant", "acme"},
			want: []string{"default (email)", "20", "override (acme)", "2", "10/s", "applies", "2", "10/s", "5", "3"}},
		{args: []string{"tenants", "limits", "get", "--type", "email", "--tenant", "other"},
			want: []string{"applies", "20", "none"}},
		{args: []string{"tenants", "limits", "set", "--type", "email", "--tenant", "big", "--concurrency", "-1"},
			want: []string{"lifted"}},
		{args: []string{"tenants", "limits", "list", "--type", "email"},
			want: []string{"TENANT", "acme", "2", "big", "lifted"}},
		{args: []string{"tenants", "limits", "list", "--type", "email", "-n", "1"},
			want: []string{"acme", `more: --after "acme"`}},
		{args: []string{"tenants", "limits", "get", "--type", "email", "--tenant", "acme", "-o", "json"},
			want: []string{`"effective"`, `"concurrency": 2`, `"rate": 10`, `"weight": 3`, `"tenant": "acme"`}},
		{args: []string{"tenants", "limits", "clear", "--type", "email", "--tenant", "acme"},
			want: []string{"cleared the override of tenant acme of email"}},
		{args: []string{"tenants", "limits", "set", "--type", "email", "--tenant", "acme"},
			fail: "needs at least one of --concurrency"},
		{args: []string{"tenants", "limits", "set", "--type", "email", "--tenant", "acme", "--weight", "5000"},
			fail: "weight 5000 is outside"},
		{args: []string{"tenants", "limits", "set", "--type", "email", "--tenant", "acme", "--rate", "-3"},
			fail: "rate -3 is not -1"},
		{args: []string{"tenants", "limits", "get", "--tenant", "acme"},
			fail: "type"},
		{args: []string{"tenants", "limits", "list", "--type", "email", "-n", "0"},
			fail: "invalid --limit 0"},
	}
	for _, s := range steps {
		if s.fail != "" {
			h.fails(s.fail, s.args...)
			continue
		}
		out := h.ok(s.args...)
		rest := out
		for _, w := range s.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Fatalf("%v: %q not found in order in:\n%s", s.args, w, out)
			}
			rest = rest[i+len(w):]
		}
	}
	// The library sees what the CLI set.
	info, err := h.queue().GetLimits(context.Background(), "email", "big")
	if err != nil || info.Effective != (quick.Limits{Concurrency: quick.NoLimit}) {
		t.Fatalf("library sees %+v, %v", info.Effective, err)
	}
}
