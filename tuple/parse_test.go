package tuple

import (
	"strings"
	"testing"
)

func TestParsePrefix(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Tuple
	}{
		{"quick", Tuple{"quick"}},
		{"  quick  ", Tuple{"quick"}},
		{"app,jobs", Tuple{"app", "jobs"}},
		{"app, jobs, 7", Tuple{"app", "jobs", int64(7)}},
		{`("app","jobs")`, Tuple{"app", "jobs"}},
		{`( "app" , "jobs" , -1 , )`, Tuple{"app", "jobs", int64(-1)}},
		{`(app, "a b", "q\"uote", "\x00\u00e9")`, Tuple{"app", "a b", `q"uote`, "\x00é"}},
		{`("1")`, Tuple{"1"}},
		{"my-app.v2:jobs@eu", Tuple{"my-app.v2:jobs@eu"}},
		{"(quick)", Tuple{"quick"}},
		{"app,", Tuple{"app"}},
		{"my app, 1.5, 7abc, -, é", Tuple{"my app", "1.5", "7abc", "-", "é"}},
		{"app/jobs", Tuple{"app/jobs"}},
		{`("a,b", "(x)")`, Tuple{"a,b", "(x)"}},
		{"+5, -0, 007", Tuple{int64(5), int64(0), int64(7)}},
	} {
		got, err := ParsePrefix(c.in)
		if err != nil {
			t.Errorf("ParsePrefix(%q): %v", c.in, err)
			continue
		}
		if Compare(got, c.want) != 0 || len(got) != len(c.want) {
			t.Errorf("ParsePrefix(%q) = %v, want %v", c.in, got, c.want)
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
		_, err := ParsePrefix(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParsePrefix(%q): error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

func FuzzParsePrefix(f *testing.F) {
	for _, s := range []string{"quick", `("app","jobs",7)`, "a,b", `("x\"`, "()"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := ParsePrefix(s)
		if err != nil {
			return
		}
		if len(tp) == 0 {
			t.Fatalf("%q parsed to an empty tuple", s)
		}
		// Whatever parses must pack into a prefix.
		FromTuple(tp)
	})
}
