package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// run is one invocation of the CLI, as main and the tests make it: flags
// are moved before positional arguments first (interspersed).
func run(ctx context.Context, d deps, args []string) error {
	app := newApp(d)
	return app.RunContext(ctx, interspersed(app, args))
}

// interspersed moves the flags of the command a command line runs in front
// of its positional arguments, so `quick jobs cancel ID --yes` parses as
// `quick jobs cancel --yes ID`. urfave/cli v2 parses with Go's flag
// package, which stops at the first positional argument and would leave
// "--yes" as a second argument; v2 has no option to change that (v1 had
// argument reordering, v3 parses flags anywhere), so the CLI reorders the
// command line before handing it over.
//
// The flags of the leaf command reached are moved before its arguments, and
// global flags written after the command (quick jobs show ID --subspace
// app) before the command, with their values (a flag that takes a value
// takes the next word unless written --flag=value); everything after "--"
// stays where it is; an unknown flag is moved as one word and the parser
// then reports it.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	flags, cmds := app.Flags, app.Commands
	var flagWords, positional, globalWords []string
	rest := args[1:]
	level := 0 // where the words of the command reached begin
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		switch {
		case w == "--":
			positional = append(positional, rest[i:]...)
			i = len(rest)
		case len(w) > 1 && w[0] == '-':
			dst := &flagWords
			known := hasFlag(flags, w)
			if !known && level > 0 && hasFlag(app.Flags, w) {
				// A global flag written after the command: it goes
				// before the command, the only place the parser reads it.
				dst, known = &globalWords, true
			}
			*dst = append(*dst, w)
			owner := flags
			if dst == &globalWords {
				owner = app.Flags
			}
			if known && takesValue(owner, w) && i+1 < len(rest) {
				i++
				*dst = append(*dst, rest[i])
			}
		default:
			if len(positional) == 0 {
				if cmd := findCommand(cmds, w); cmd != nil {
					// A (sub)command: what came before belongs to its parent.
					out = append(append(out, flagWords...), w)
					flagWords, level = nil, i+1
					flags, cmds = cmd.Flags, cmd.Subcommands
					continue
				}
			}
			positional = append(positional, w)
		}
	}
	if len(cmds) > 0 {
		// A command group given no known subcommand: leave its words as
		// they are, for its "unknown command" message.
		return append(out, rest[level:]...)
	}
	out = append(append(out, flagWords...), positional...)
	if len(globalWords) > 0 {
		out = append(append([]string{out[0]}, globalWords...), out[1:]...)
	}
	return out
}

// hasFlag reports whether the flag word w names one of flags.
func hasFlag(flags []cli.Flag, w string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-"), "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the flag word w names a flag of flags that
// takes its value from the next word.
func takesValue(flags []cli.Flag, w string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				tv, ok := f.(interface{ TakesValue() bool })
				return ok && tv.TakesValue()
			}
		}
	}
	return false
}

// usageError is a command line the parser refused: main prints a short
// usage line before it instead of the whole help.
type usageError struct {
	usage string // "quick jobs cancel [options] ID"
	help  string // "quick jobs cancel --help"
	err   error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// onUsageError replaces urfave/cli's default, which prints the command's
// whole help before the error.
func onUsageError(c *cli.Context, err error, _ bool) error {
	return newUsageError(c, flagValueError(c, err))
}

func newUsageError(c *cli.Context, err error) error {
	name := "quick"
	args := "[options] COMMAND"
	if c != nil && c.Command != nil && c.Command.Name != "" && c.Command.Name != "quick" {
		name = commandPath(c)
		args = "[options]"
		if c.Command.ArgsUsage != "" {
			args += " " + c.Command.ArgsUsage
		}
		if hasSubcommands(c.Command) {
			args = "COMMAND [options]"
		}
	}
	return &usageError{usage: name + " " + args, help: name + " --help", err: err}
}

func hasSubcommands(cmd *cli.Command) bool {
	for _, s := range cmd.Subcommands {
		if s.Name != "help" {
			return true
		}
	}
	return false
}

// commandPath is "quick jobs cancel" for the command c runs.
func commandPath(c *cli.Context) string {
	var names []string
	for _, cc := range c.Lineage() {
		if cc.Command != nil && cc.Command.Name != "" {
			names = append(names, cc.Command.Name)
		}
	}
	path := []string{"quick"}
	for i := len(names) - 1; i >= 0; i-- {
		if names[i] != "quick" && (len(path) == 0 || path[len(path)-1] != names[i]) {
			path = append(path, names[i])
		}
	}
	return strings.Join(path, " ")
}

// requireFlags replaces the parser's check of required flags, which prints
// the whole help, by one that returns a usage error; it walks every command.
func requireFlags(cmds []*cli.Command) {
	for _, cmd := range cmds {
		cmd.OnUsageError = onUsageError
		var required []string
		for _, f := range cmd.Flags {
			if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
				sf.Required = false
				sf.Usage += " (required)"
				required = append(required, sf.Name)
			}
		}
		if len(required) > 0 {
			before := cmd.Before
			cmd.Before = func(c *cli.Context) error {
				for _, n := range required {
					if !c.IsSet(n) {
						return newUsageError(c, fmt.Errorf("required flag --%s not set", n))
					}
				}
				if before != nil {
					return before(c)
				}
				return nil
			}
		}
		requireFlags(cmd.Subcommands)
	}
}

// report writes a failed run's error to w: a usage error gets a short usage
// line first, and the "quick: " prefix is not repeated when the library's
// error already starts with it.
func report(w io.Writer, err error) {
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "usage: %s  (see %s)\n", ue.usage, ue.help)
	}
	fmt.Fprintln(w, errorLine(err))
}

// errorLine is the one line main prints for err: prefixed by "quick: "
// unless it already names the program (the library's errors start with
// "quick: ", usage errors with the command's path). A library error wrapped
// by the CLI's context ("wait for ID: quick: job not found") loses its
// inner "quick: ", so the line names the program once.
func errorLine(err error) string {
	msg := strings.ReplaceAll(err.Error(), ": quick: ", ": ")
	if strings.HasPrefix(msg, "quick: ") || strings.HasPrefix(msg, "quick ") {
		return msg
	}
	return "quick: " + msg
}

// buildVersion, when set at link time (go build -ldflags "-X
// main.buildVersion=v1.2.3"), is what --version prints.
var buildVersion string

// version is buildVersion, else the module version the binary was built
// from, or its VCS revision when built from a checkout ("(devel)" when the
// build recorded neither, as with -buildvcs=false).
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if (v == "" || v == "(devel)") && rev != "" {
		return "devel " + rev[:min(12, len(rev))] + modified
	}
	if v == "" {
		return "(devel)"
	}
	return v
}
