package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/quick"
)

// TestFlagsAfterArguments: flags written after a command's positional
// arguments work (urfave/cli v2 alone stops parsing at the first one and
// takes "--yes" for a second argument: these failed before interspersed).
func TestFlagsAfterArguments(t *testing.T) {
	h := newHarness(t)
	f := h.fill()
	ready, leased := f.email[39].String(), f.leased[0].String()

	var j jobJSON
	if err := json.Unmarshal([]byte(h.ok("jobs", "show", ready, "-o", "json")), &j); err != nil || j.ID != ready {
		t.Fatalf("jobs show ID -o json: %v %+v", err, j)
	}
	r := h.run("jobs", "cancel", ready, "--yes")
	if r.err != nil || r.stdout != "cancelled "+ready+" (was ready)\n" {
		t.Fatalf("jobs cancel ID --yes: %v %q %q", r.err, r.stdout, r.stderr)
	}
	if out := h.ok("jobs", "cancel", leased, "--output=json", "-y"); !strings.Contains(out, `"state_before": "leased"`) {
		t.Errorf("jobs cancel ID --output=json -y: %s", out)
	}
	h.ok("cron", "add", "--name", "nightly", "--spec", "@daily", "--type", "report")
	if out := h.ok("cron", "remove", "nightly", "--yes"); out != "removed schedule nightly\n" {
		t.Errorf("cron remove NAME --yes: %q", out)
	}
	// A flag's value is not taken for a positional argument, and "--" ends
	// the flags.
	if out := h.ok("dead", "requeue", f.dead[0].String(), "--output", "json"); !strings.Contains(out, `"requeued": true`) {
		t.Errorf("dead requeue ID --output json: %s", out)
	}
	// A global flag after the command goes before it.
	if out := h.ok("jobs", "show", f.report[0].String(), "--subspace", "quick"); !strings.Contains(out, "daily report") {
		t.Errorf("jobs show ID --subspace quick: %s", out)
	}
	h.fails("job not found", "jobs", "show", f.report[0].String(), "--subspace", "other")
	h.fails(`"--yes" is not a UUID`, "jobs", "show", "--", "--yes")
	h.fails("flag provided but not defined: -bogus", "jobs", "show", ready, "--bogus")
}

func TestInterspersed(t *testing.T) {
	app := newApp(deps{})
	for _, tc := range []struct{ in, want string }{
		{"quick jobs cancel ID --yes", "quick jobs cancel --yes ID"},
		{"quick -o json jobs show ID --output table", "quick -o json jobs show --output table ID"},
		{"quick jobs list --type email --lane 3", "quick jobs list --type email --lane 3"},
		{"quick dead requeue A B -o json", "quick dead requeue -o json A B"},
		{"quick enqueue - --type etl", "quick enqueue --type etl -"},
		{"quick enqueue --type=etl - --priority high", "quick enqueue --type=etl --priority high -"},
		{"quick jobs show -- --yes", "quick jobs show -- --yes"},
		{"quick --subspace app stats --type x", "quick --subspace app stats --type x"},
		{"quick frob --yes", "quick frob --yes"},
		{"quick jobs show ID --subspace app -o json", "quick --subspace app jobs show -o json ID"},
		{"quick stats --embedded --type x", "quick --embedded stats --type x"},
		{"quick jobs show ID --subspace=app", "quick --subspace=app jobs show ID"},
		{"quick jobs frob --yes", "quick jobs frob --yes"},
	} {
		got := strings.Join(interspersed(app, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestErrorLines: what main prints for a failed run. The library's errors
// start with "quick: ", which main used to prefix again.
func TestErrorLines(t *testing.T) {
	h := newHarness(t)
	r := h.fails("job not found", "jobs", "show", h.id(999).String())
	var buf bytes.Buffer
	report(&buf, r.err)
	if got := buf.String(); strings.Count(got, "quick:") != 1 || !strings.HasPrefix(got, "quick: job not found") {
		t.Errorf("not found: %q", got)
	}
	if exitCode(r.err) != 1 {
		t.Errorf("exit code %d, want 1", exitCode(r.err))
	}

	// A usage error: a short usage line, not the whole help, then the error;
	// exit status 2; nothing on stdout.
	for _, args := range [][]string{
		{"jobs", "cancel"},
		{"jobs", "list"},
		{"jobs", "list", "--type", "email", "--bogus"},
		{"enqueue", "--type"},
	} {
		r := h.run(args...)
		if r.err == nil {
			t.Fatalf("%v: no error", args)
		}
		buf.Reset()
		report(&buf, r.err)
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "usage: quick "+args[0]) || !strings.Contains(lines[0], "--help)") ||
			!strings.HasPrefix(lines[1], "quick") {
			t.Errorf("%v: printed %q", args, buf.String())
		}
		if exitCode(r.err) != 2 {
			t.Errorf("%v: exit code %d, want 2", args, exitCode(r.err))
		}
		if r.stdout != "" || strings.Contains(r.stderr, "OPTIONS:") {
			t.Errorf("%v: help printed: stdout %q stderr %q", args, r.stdout, r.stderr)
		}
	}
	if exitCode(errInterrupted) != 130 || exitCode(errors.Join(errors.New("x"), errInterrupted)) != 130 {
		t.Error("interrupted: want exit 130")
	}
}

func TestVersion(t *testing.T) {
	h := newHarness(t)
	out := h.ok("--version")
	if !strings.HasPrefix(out, "quick version ") || len(out) < len("quick version x\n") {
		t.Errorf("--version: %q", out)
	}
}

func TestOutputCaseInsensitive(t *testing.T) {
	h := newHarness(t)
	h.fill()
	for _, o := range []string{"JSON", "Json", "json"} {
		if out := h.ok("stats", "-o", o); !strings.HasPrefix(out, "{") {
			t.Errorf("-o %s: %q", o, out)
		}
	}
	if out := h.ok("-o", "TABLE", "stats"); !strings.HasPrefix(out, "TASK TYPE") {
		t.Errorf("-o TABLE: %q", out)
	}
}

// TestUnknownTaskType: a task type nothing was enqueued with is an error
// naming the known ones, not a table of zeros with exit status 0.
func TestUnknownTaskType(t *testing.T) {
	h := newHarness(t)
	want := `unknown task type "emial": no job of it was ever enqueued (known: email, report)`
	h.fill()
	for _, args := range [][]string{
		{"stats", "--type", "emial"},
		{"lanes", "--type", "emial"},
		{"lanes", "--type", "email", "--type", "emial"},
		{"jobs", "list", "--type", "emial"},
		{"dead", "list", "--type", "emial"},
		{"dead", "purge", "--type", "emial", "--all", "--yes"},
	} {
		r := h.fails(want, args...)
		if !errors.Is(r.err, errUnknownTaskType) {
			t.Errorf("%v: %v is not errUnknownTaskType", args, r.err)
		}
	}
	empty := newHarness(t)
	empty.fails("nothing was ever enqueued in this queue", "stats", "--type", "email")
}

// TestJSONShapes: every command's JSON output is an object at the top
// level, with snake_case keys only.
func TestJSONShapes(t *testing.T) {
	h := newHarness(t)
	f := h.fill()
	h.ok("cron", "add", "--name", "nightly", "--spec", "@daily", "--type", "report")
	for _, args := range [][]string{
		{"stats"}, {"lanes", "--type", "report"}, {"tenants"}, {"workers"}, {"cron", "list"},
		{"jobs", "list", "--type", "email", "--limit", "2"}, {"jobs", "show", f.report[0].String()},
		{"dead", "list", "--type", "email"}, {"dead", "requeue", f.dead[0].String()},
		{"enqueue", "--type", "email"}, {"cron", "repair"},
		{"demo", "--jobs", "5", "--workers", "1", "--duration", "5s", "--speed", "20"},
	} {
		out := h.ok(append(args, "-o", "json")...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if _, ok := v.(map[string]any); !ok {
			t.Errorf("%v: top level is %T, want an object", args, v)
		}
		checkSnake(t, args, v)
	}
}

func checkSnake(t *testing.T, args []string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k != strings.ToLower(k) || strings.ContainsAny(k, " -") {
				t.Errorf("%v: key %q is not snake_case", args, k)
			}
			checkSnake(t, args, e)
		}
	case []any:
		for _, e := range v {
			checkSnake(t, args, e)
		}
	}
}

// TestStatsWatch: stats --watch redraws every --interval until
// interrupted, like lanes --watch.
func TestStatsWatch(t *testing.T) {
	h := newHarness(t)
	h.fill()
	ctx, cancel := context.WithCancel(context.Background())
	d, out, errb := h.deps("")
	d.IsTerminal = func(io.Writer) bool { return true }
	done := make(chan error, 1)
	slept := h.clk.Changed()
	go func() { done <- run(ctx, d, []string{"quick", "stats", "--watch", "--interval", "3s"}) }()
	waitSleep(t, slept)
	slept = h.clk.Changed()
	q := h.queue()
	if _, err := q.Enqueue(context.Background(), quick.NewJob{TaskType: "email"}); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(3 * time.Second)
	waitSleep(t, slept)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch: %v (stderr %s)", err, errb)
	}
	frames := strings.Split(out.String(), "\x1b[H")[1:]
	if len(frames) != 2 || !strings.HasPrefix(frames[0], "quick stats  subspace quick") ||
		!strings.Contains(frames[0], "email      35 ") || !strings.Contains(frames[1], "email      36 ") {
		t.Errorf("frames: %q", frames)
	}
	h.fails("invalid --interval", "stats", "--watch", "--interval", "0s")
}

// TestHelpText: no command's help shows a placeholder made of a backquoted
// word (urfave/cli turns `x` in a flag's usage into the flag's value name:
// "--waitable quick jobs wait"), a flag with two defaults, or a flag that
// is gone (--layout, --lanes, --lane, --budget of lanes).
func TestHelpText(t *testing.T) {
	h := newHarness(t)
	h.fails("invalid --timeout -1s", "jobs", "wait", h.id(1).String(), "--timeout", "-1s")
	var paths [][]string
	for _, c := range newApp(deps{}).Commands {
		paths = append(paths, []string{c.Name})
		for _, s := range c.Subcommands {
			paths = append(paths, []string{c.Name, s.Name})
		}
	}
	paths = append(paths, nil)
	for _, p := range paths {
		out := h.ok(append(p, "--help")...)
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "`") {
				t.Errorf("quick %v --help: a backquote: %q", p, l)
			}
			if strings.Count(l, "(default") > 1 {
				t.Errorf("quick %v --help: two defaults: %q", p, l)
			}
			for _, gone := range []string{"--layout", "--lanes ", "--lane ", "lanes registry"} {
				if strings.Contains(l, gone) {
					t.Errorf("quick %v --help: %q is gone: %q", p, gone, l)
				}
			}
		}
	}
	if len(paths) < 20 {
		t.Fatalf("only %d commands checked", len(paths))
	}
	// The backquotes themselves vanish from the help, so look at the
	// flags' usage strings.
	check := func(where string, fs []cli.Flag) {
		for _, f := range fs {
			if u, ok := f.(interface{ GetUsage() string }); ok && strings.Contains(u.GetUsage(), "`") {
				t.Errorf("%s --%s: a backquoted word in its usage becomes the value placeholder: %q", where, f.Names()[0], u.GetUsage())
			}
		}
	}
	app := newApp(deps{})
	check("quick", app.Flags)
	for _, c := range app.Commands {
		check("quick "+c.Name, c.Flags)
		for _, s := range c.Subcommands {
			check("quick "+c.Name+" "+s.Name, s.Flags)
		}
	}
}
