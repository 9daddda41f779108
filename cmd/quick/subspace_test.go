package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/worker"
)

func TestParseSubspace(t *testing.T) {
	for _, c := range []struct {
		in   string
		want tuple.Tuple
	}{
		{"quick", tuple.Tuple{"quick"}},
		{"  quick  ", tuple.Tuple{"quick"}},
		{"app,jobs", tuple.Tuple{"app", "jobs"}},
		{"app, jobs, 7", tuple.Tuple{"app", "jobs", int64(7)}},
		{`("app","jobs")`, tuple.Tuple{"app", "jobs"}},
		{`( "app" , "jobs" , -1 , )`, tuple.Tuple{"app", "jobs", int64(-1)}},
		{`(app, "a b", "q\"uote", "\x00\u00e9")`, tuple.Tuple{"app", "a b", `q"uote`, "\x00é"}},
		{`("1")`, tuple.Tuple{"1"}},
		{"my-app.v2:jobs@eu", tuple.Tuple{"my-app.v2:jobs@eu"}},
		{"(quick)", tuple.Tuple{"quick"}},
		{"app,", tuple.Tuple{"app"}},
		{"my app, 1.5, 7abc, -, é", tuple.Tuple{"my app", "1.5", "7abc", "-", "é"}},
		{"app/jobs", tuple.Tuple{"app/jobs"}},
		{`("a,b", "(x)")`, tuple.Tuple{"a,b", "(x)"}},
		{"+5, -0, 007", tuple.Tuple{int64(5), int64(0), int64(7)}},
	} {
		got, err := parseSubspace(c.in)
		if err != nil {
			t.Errorf("parseSubspace(%q): %v", c.in, err)
			continue
		}
		if tuple.Compare(got, c.want) != 0 || len(got) != len(c.want) {
			t.Errorf("parseSubspace(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"()", "empty tuple"},
		{`("app"`, "missing ')'"},
		{`("app`, "unterminated string at offset 1"},
		{"app,,jobs", "empty element at offset 4"},
		{",app", "empty element at offset 0"},
		{`"a" b`, `unexpected 'b' at offset 4`},
		{`a"b"`, `unexpected '"' at offset 1`},
		{"a(b)", `unexpected '(' at offset 1`},
		{"a)", `unexpected ')' at offset 1`},
		{`("app") x`, `unexpected "x" after ')'`},
		{"99999999999999999999", "bad integer"},
		{`"\q"`, "bad string"},
		{"(a)(b)", "after ')'"},
	} {
		_, err := parseSubspace(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseSubspace(%q): error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

func FuzzParseSubspace(f *testing.F) {
	for _, s := range []string{"quick", `("app","jobs",7)`, "a,b", `("x\"`, "()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := parseSubspace(s)
		if err != nil {
			return
		}
		if len(tp) == 0 {
			t.Fatalf("%q parsed to an empty tuple", s)
		}
		// Whatever parses must pack into a prefix.
		tuple.FromTuple(tp)
	})
}

// FuzzParseSubspaceLikeWorker: every subspace both parsers read, they read
// the same, so the CLI and a worker binary given the same -subspace address
// the same queue. (Quoted elements with commas are the CLI's only extension.)
func FuzzParseSubspaceLikeWorker(f *testing.F) {
	for _, s := range []string{"quick", "app,jobs", "(app, 7)", " a , -3 ,", `("x", y)`, "my app"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mine, err := parseSubspace(s)
		if err != nil || strings.ContainsAny(s, `"`) {
			return
		}
		theirs, err := worker.ParseSubspace(s)
		if err != nil {
			return
		}
		if got := tuple.FromTuple(mine); !bytes.Equal(got.Bytes(), theirs.Bytes()) {
			t.Fatalf("%q: CLI reads %v, worker %v", s, mine, theirs)
		}
	})
}

func TestParseDirectory(t *testing.T) {
	p, err := parseDirectory("/app/ jobs//q/")
	if err != nil || strings.Join(p, "|") != "app|jobs|q" {
		t.Errorf("parseDirectory: %q %v", p, err)
	}
	if _, err := parseDirectory("/"); err == nil {
		t.Error("empty directory accepted")
	}
}
