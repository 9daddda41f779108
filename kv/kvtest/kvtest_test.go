package kvtest

import (
	"strings"
	"testing"
)

// TestCasesWellFormed checks the table itself: unique names, a rule with a
// source for every case, and a Run function.
func TestCasesWellFormed(t *testing.T) {
	cases := Cases()
	if len(cases) == 0 {
		t.Fatal("Cases() is empty")
	}
	seen := map[string]bool{}
	for i, c := range cases {
		if strings.TrimSpace(c.Name) == "" {
			t.Errorf("case %d has an empty name", i)
		}
		if seen[c.Name] {
			t.Errorf("duplicate case name %q", c.Name)
		}
		seen[c.Name] = true
		if strings.TrimSpace(c.Rule) == "" {
			t.Errorf("case %q has an empty Rule", c.Name)
		}
		if !strings.Contains(c.Rule, "(") {
			t.Errorf("case %q: Rule %q names no source", c.Name, c.Rule)
		}
		if c.Run == nil {
			t.Errorf("case %q has no Run", c.Name)
		}
		if strings.ContainsAny(c.Name, " \t") {
			t.Errorf("case %q: names must not contain spaces (go test -run)", c.Name)
		}
	}
}
