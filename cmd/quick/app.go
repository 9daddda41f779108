package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// deps is everything the CLI takes from the outside world, so tests can run
// every command in process against an injected database and clock.
type deps struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Clock is the queue's clock and the one ages are measured on.
	Clock clock.Clock
	// DB, when set, is the database every command uses, whatever the
	// connection flags say (tests inject a memkv).
	DB kv.Database
	// OpenFDB opens a FoundationDB cluster (fdbkv.Open).
	OpenFDB func(clusterFile string) (kv.Database, error)
	// OpenDirectory resolves a directory layer path (fdbkv.OpenDirectory).
	OpenDirectory func(db kv.Database, path []string) ([]byte, error)
	// IsTerminal reports whether w is a terminal (for redrawing in place).
	IsTerminal func(w io.Writer) bool
	// FDBBuilt reports whether the binary has the FoundationDB adapter.
	FDBBuilt bool
	// DemoSnapshot is where `quick demo` and `quick ui --demo` save their
	// queue by default ("": they save none unless --save says where).
	DemoSnapshot string
}

func realDeps() deps {
	return deps{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Clock:         clock.Real(),
		OpenFDB:       fdbkv.Open,
		OpenDirectory: fdbkv.OpenDirectory,
		IsTerminal:    isTerminal,
		FDBBuilt:      fdbkv.Built,
		DemoSnapshot:  defaultSnapshotPath(),
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// app is one run of the CLI: its dependencies and the connection it opens
// lazily, on the first command that needs the queue.
type app struct {
	d  deps
	q  *quick.Queue
	db kv.Database
	// counted wraps db, so commands can report what they cost.
	counted *kv.CountedDB
	close   []func()
	// snap is the snapshot file the queue was loaded from (--snapshot).
	snap *openSnapshot
}

// openSnapshot is a snapshot the CLI loaded: where from, what it said, and
// whether a change may be saved back to it.
type openSnapshot struct {
	path     string
	header   snapshotHeader
	db       kv.Database
	readOnly bool
	// wall is the clock the run started with, on which the header's
	// SavedAt is read (the real clock; tests' fake one).
	wall clock.Clock
}

// Global flag names.
const (
	flagClusterFile = "cluster-file"
	flagEmbedded    = "embedded"
	flagSnapshot    = "snapshot"
	flagSubspace    = "subspace"
	flagDirectory   = "directory"
	flagOutput      = "output"
)

func newApp(d deps) *cli.App {
	if d.Clock == nil {
		d.Clock = clock.Real()
	}
	if d.IsTerminal == nil {
		d.IsTerminal = func(io.Writer) bool { return false }
	}
	if d.Stdin == nil {
		d.Stdin = strings.NewReader("")
	}
	a := &app{d: d}
	ca := &cli.App{
		Name:  "quick",
		Usage: "operate a quickfdb job queue on FoundationDB",
		Description: "Flags may come anywhere after quick: before or after the command and its arguments (quick jobs cancel ID --yes).\n" +
			"Without -tags fdb the binary cannot reach FoundationDB: run quick demo, then try any command on the queue it leaves\n" +
			"with --snapshot FILE (the demo prints the file), or use --embedded for an empty in-process database.",
		Reader:          d.Stdin,
		Writer:          d.Stdout,
		ErrWriter:       d.Stderr,
		Version:         version(),
		HideHelpCommand: true,
		OnUsageError:    onUsageError,
		Suggest:         true,
		ExitErrHandler:  func(*cli.Context, error) {}, // main prints and exits
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagClusterFile, Aliases: []string{"C"}, EnvVars: []string{"FDB_CLUSTER_FILE"},
				Usage: "FoundationDB cluster file (needs a binary built with -tags fdb); empty means FDB's default"},
			&cli.BoolFlag{Name: flagEmbedded, Usage: "use an empty in-process database (memkv) instead of FoundationDB: for trying commands out"},
			&cli.StringFlag{Name: flagSnapshot, EnvVars: []string{"QUICK_SNAPSHOT"},
				Usage: "open the queue saved in this file by quick demo or quick ui --demo (they print where), without FoundationDB; a change is saved back to the file, or refused while the demo still runs"},
			&cli.StringFlag{Name: flagSubspace, EnvVars: []string{"QUICK_SUBSPACE"},
				Usage: `tuple prefix of the queue: a word (quick), words (app,jobs) or a tuple ("app","jobs",1)`, DefaultText: defaultSubspace},
			&cli.StringFlag{Name: flagDirectory, EnvVars: []string{"QUICK_DIRECTORY"},
				Usage: "directory layer path a/b/c holding the queue (FoundationDB only); --subspace then nests inside it"},
			outputFlag(true),
		},
		Action: unknownCommand,
		After: func(*cli.Context) error {
			err := a.saveSnapshot()
			for i := len(a.close) - 1; i >= 0; i-- {
				a.close[i]()
			}
			a.close = nil
			return err
		},
		Commands: []*cli.Command{
			a.lanesCommand(),
			a.zonesCommand(),
			a.tenantsCommand(),
			a.tenantCommand(),
			a.jobsCommand(),
			a.enqueueCommand(),
			a.deadCommand(),
			a.cronCommand(),
			a.workersCommand(),
			a.statsCommand(),
			a.pauseCommand(),
			a.resumeCommand(),
			a.demoCommand(),
			a.uiCommand(),
		},
	}
	requireFlags(ca.Commands)
	return ca
}

// outputFlag is --output, on the app (with its environment variable) and on
// each command, so it works on either side of the command name.
func outputFlag(global bool) cli.Flag {
	f := &cli.StringFlag{Name: flagOutput, Aliases: []string{"o"}, Usage: "output format: table or json", DefaultText: "table"}
	if global {
		f.EnvVars = []string{"QUICK_OUTPUT"}
	}
	return f
}

// unknownCommand is the action of the app and of command groups: with no
// argument it shows help, with one it is an unknown command.
func unknownCommand(c *cli.Context) error {
	if c.Args().Len() > 0 {
		name := "quick"
		if c.Command != nil && c.Command.Name != "" && c.Command.Name != "quick" {
			name = "quick " + c.Command.Name
		}
		// A usage error like any other the parser refuses: exit status 2.
		return newUsageError(c, fmt.Errorf("unknown command %q (see %s --help)", c.Args().First(), name))
	}
	return cli.ShowSubcommandHelp(c)
}

// globalString reads a flag set anywhere in the context's lineage.
func globalString(c *cli.Context, name string) string {
	for _, cc := range c.Lineage() {
		if cc.IsSet(name) {
			return cc.String(name)
		}
	}
	return ""
}

// globalStringSlice reads a repeatable flag set anywhere in the context's
// lineage.
func globalStringSlice(c *cli.Context, name string) []string {
	for _, cc := range c.Lineage() {
		if cc.IsSet(name) {
			return cc.StringSlice(name)
		}
	}
	return nil
}

// queue opens the database and the queue the global flags name, once per run.
func (a *app) queue(c *cli.Context) (*quick.Queue, error) {
	if a.q != nil {
		return a.q, nil
	}
	db, err := a.database(c)
	if err != nil {
		return nil, err
	}
	space, err := a.subspace(c, db)
	if err != nil {
		return nil, err
	}
	q, err := quick.Open(c.Context, db, space, quick.Options{
		Clock:  a.d.Clock,
		Logger: slog.New(slog.NewTextHandler(a.d.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, fmt.Errorf("open the queue under %s: %w", describeSpace(c), err)
	}
	a.q = q
	return q, nil
}

func (a *app) database(c *cli.Context) (kv.Database, error) {
	if a.db != nil {
		return a.db, nil
	}
	clusterFile := globalString(c, flagClusterFile)
	embedded := c.Bool(flagEmbedded)
	snapshot := globalString(c, flagSnapshot)
	clusterGiven := clusterFile != "" && clusterFile != os.Getenv("FDB_CLUSTER_FILE")
	switch {
	case a.d.DB != nil:
		a.db = a.d.DB
	case embedded && clusterGiven:
		return nil, errors.New("--embedded and --cluster-file both given: choose one database")
	case snapshot != "" && (embedded || clusterGiven):
		return nil, errors.New("--snapshot with --embedded or --cluster-file: choose one database")
	case snapshot != "":
		db, err := a.openSnapshot(c.Context, snapshot)
		if err != nil {
			return nil, err
		}
		a.db = db
	case embedded:
		m := memkv.Open(memkv.Options{})
		a.close = append(a.close, func() { m.Close() })
		a.db = m
	default:
		if !a.d.FDBBuilt {
			where := "the default cluster file"
			if clusterFile != "" {
				where = "cluster file " + clusterFile
			}
			return nil, fmt.Errorf("cannot open FoundationDB (%s): this quick binary was built without FoundationDB support; "+
				"install the FoundationDB client (libfdb_c 7.3) and rebuild with `go build -tags fdb ./cmd/quick`, "+
				"or pass --embedded for an empty in-process database", where)
		}
		db, err := a.d.OpenFDB(clusterFile)
		if err != nil {
			return nil, fmt.Errorf("open FoundationDB: %w", err)
		}
		a.db = db
	}
	a.counted = kv.WithCounters(a.db)
	a.db = a.counted
	return a.db, nil
}

// stats returns the operations counted so far this run.
func (a *app) stats() kv.Stats {
	if a.counted == nil {
		return kv.Stats{}
	}
	return a.counted.Stats()
}

// subspace resolves --directory and --subspace into the queue's subspace.
func (a *app) subspace(c *cli.Context, db kv.Database) (tuple.Subspace, error) {
	sub := globalString(c, flagSubspace)
	dir := globalString(c, flagDirectory)
	if sub == "" && a.snap != nil {
		sub = a.snap.header.Subspace // the demo's queue, unless told otherwise
	}
	if dir == "" {
		if sub == "" {
			sub = defaultSubspace
		}
		t, err := parseSubspace(sub)
		if err != nil {
			return tuple.Subspace{}, err
		}
		return tuple.FromTuple(t), nil
	}
	path, err := parseDirectory(dir)
	if err != nil {
		return tuple.Subspace{}, err
	}
	var t tuple.Tuple
	if sub != "" {
		if t, err = parseSubspace(sub); err != nil {
			return tuple.Subspace{}, err
		}
	}
	if a.d.OpenDirectory == nil {
		return tuple.Subspace{}, fmt.Errorf("--directory %s: no directory layer in this build", dir)
	}
	prefix, err := a.d.OpenDirectory(db, path)
	if err != nil {
		if errors.Is(err, fdbkv.ErrNotBuilt) || !a.d.FDBBuilt {
			return tuple.Subspace{}, fmt.Errorf("--directory %s needs FoundationDB's directory layer: build with -tags fdb and use --cluster-file, or use --subspace: %w", dir, err)
		}
		return tuple.Subspace{}, fmt.Errorf("--directory %s: %w", dir, err)
	}
	space := tuple.NewSubspace(prefix)
	if len(t) > 0 {
		space = space.Sub(t...)
	}
	return space, nil
}

func describeSpace(c *cli.Context) string {
	if d := globalString(c, flagDirectory); d != "" {
		return "directory " + d
	}
	if s := globalString(c, flagSubspace); s != "" {
		return "subspace " + s
	}
	return "subspace " + defaultSubspace
}

// now is the CLI's clock reading.
func (a *app) now() time.Time { return a.d.Clock.Now() }

// confirm asks on stdin for "yes" unless --yes was given.
func (a *app) confirm(c *cli.Context, what string) error {
	if c.Bool("yes") {
		return nil
	}
	fmt.Fprintf(a.d.Stderr, "%s\nType \"yes\" to continue: ", what)
	line, err := readLine(a.d.Stdin)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read confirmation: %w", err)
	}
	if strings.TrimSpace(line) != "yes" {
		fmt.Fprintln(a.d.Stderr)
		return errors.New("aborted: not confirmed (answer \"yes\", or pass --yes)")
	}
	return nil
}

var yesFlag = &cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"}

// readLine reads up to a newline, one byte at a time so nothing of stdin
// past the line is consumed.
func readLine(r io.Reader) (string, error) {
	var sb strings.Builder
	var b [1]byte
	for sb.Len() < 4096 {
		n, err := r.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				return sb.String(), nil
			}
			sb.WriteByte(b[0])
		}
		if err != nil {
			return sb.String(), err
		}
	}
	return sb.String(), nil
}
