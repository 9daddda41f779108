package workermain

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Flags are the command-line flags of a worker binary. Register adds them
// to a FlagSet; RunMain does both for you.
type Flags struct {
	ClusterFile     string
	Embedded        bool
	Subspace        string
	Concurrency     int
	Lanes           int
	ID              string
	ShutdownTimeout time.Duration
	StatsInterval   time.Duration
	LogLevel        string
	MetricsListen   string
	// Clusters, when set, makes the worker serve several clusters (a
	// worker.Group): NAME=CLUSTER_FILE pairs, comma-separated (with
	// -embedded, just names: one in-memory database each).
	Clusters string

	// AllowEmbedded lets -embedded open the in-memory engine. No flag sets
	// it: a demo or test program sets it in code, so a production binary
	// cannot be talked into running on a database that forgets everything.
	AllowEmbedded bool
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.ClusterFile, "cluster-file", "", "FoundationDB cluster file (\"\" for the default one; needs a build with -tags fdb)")
	fs.BoolVar(&f.Embedded, "embedded", false, "use an in-process in-memory database instead of FoundationDB: nothing is persisted (only in demo and test programs that allow it)")
	fs.StringVar(&f.Subspace, "subspace", "quick", "tuple prefix the queue lives under: comma-separated strings and integers, e.g. app,jobs or (\"app\", 7)")
	fs.IntVar(&f.Concurrency, "concurrency", 0, "jobs run at once per task type, for handlers that set none (default 10)")
	fs.IntVar(&f.Lanes, "lanes", 0, "hash lanes a new zone spreads its jobs over (quick.Options.ZoneLanes; default 1, a busy zone grows more)")
	fs.StringVar(&f.ID, "id", "", "worker ID (default host-pid-random)")
	fs.DurationVar(&f.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long running jobs get to finish on SIGINT/SIGTERM before they are released")
	fs.DurationVar(&f.StatsInterval, "stats-interval", 0, "log the worker's counts this often (0: only at exit)")
	fs.StringVar(&f.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.Clusters, "clusters", "", "serve several FoundationDB clusters from this process, sharing its handler slots: NAME=CLUSTER_FILE,... (with -embedded: NAME,...); each cluster's queue is at -subspace")
	fs.StringVar(&f.MetricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. :9464), with queue depth gauges measured by one worker of the fleet at a time, and probes at /healthz (the process is up) and /readyz (the worker claims and the database answers within 2s)")
}

// ErrFlags wraps the errors of bad command-line flags.
var ErrFlags = errors.New("workermain: bad flags")

// ErrEmbeddedNotAllowed is the error of -embedded in a program that did not
// allow the in-memory engine (Flags.AllowEmbedded).
var ErrEmbeddedNotAllowed = errors.New("workermain: -embedded is not allowed in this program: the in-memory engine forgets every job when the process exits, so only demo and test programs may use it (set MainOptions.AllowEmbedded in code)")

// Open opens the database and subspace the flags name.
func (f *Flags) Open() (kv.Database, tuple.Subspace, error) {
	space, err := ParseSubspace(f.Subspace)
	if err != nil {
		return nil, tuple.Subspace{}, err
	}
	if f.Embedded {
		if f.ClusterFile != "" {
			return nil, tuple.Subspace{}, fmt.Errorf("%w: -embedded and -cluster-file exclude each other", ErrFlags)
		}
		if !f.AllowEmbedded {
			return nil, tuple.Subspace{}, fmt.Errorf("%w: %w", ErrFlags, ErrEmbeddedNotAllowed)
		}
		return memkv.Open(memkv.Options{}), space, nil
	}
	db, err := fdbkv.Open(f.ClusterFile)
	if err != nil {
		if errors.Is(err, fdbkv.ErrNotBuilt) {
			return nil, tuple.Subspace{}, fmt.Errorf("this binary has no FoundationDB support: build it with -tags fdb to use -cluster-file: %w", err)
		}
		return nil, tuple.Subspace{}, fmt.Errorf("open FoundationDB: %w", err)
	}
	return db, space, nil
}

// NamedDB is one cluster of -clusters, opened.
type NamedDB struct {
	Name string
	DB   kv.Database
}

// OpenClusters opens the databases -clusters names, in order; none without
// -clusters. On an error it closes those it opened.
func (f *Flags) OpenClusters() ([]NamedDB, tuple.Subspace, error) {
	if f.Clusters == "" {
		return nil, tuple.Subspace{}, nil
	}
	space, err := ParseSubspace(f.Subspace)
	if err != nil {
		return nil, tuple.Subspace{}, err
	}
	if f.ClusterFile != "" {
		return nil, tuple.Subspace{}, fmt.Errorf("%w: -clusters and -cluster-file exclude each other", ErrFlags)
	}
	if f.Embedded && !f.AllowEmbedded {
		return nil, tuple.Subspace{}, fmt.Errorf("%w: %w", ErrFlags, ErrEmbeddedNotAllowed)
	}
	var out []NamedDB
	closeAll := func() {
		for _, n := range out {
			if c, ok := n.DB.(io.Closer); ok {
				c.Close()
			}
		}
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(f.Clusters, ",") {
		name, file, hasFile := strings.Cut(strings.TrimSpace(item), "=")
		if name == "" || seen[name] || hasFile == f.Embedded {
			closeAll()
			return nil, tuple.Subspace{}, fmt.Errorf("%w: -clusters %q: want NAME=CLUSTER_FILE,... (with -embedded: NAME,...), names unique", ErrFlags, f.Clusters)
		}
		seen[name] = true
		var db kv.Database
		if f.Embedded {
			db = memkv.Open(memkv.Options{})
		} else if db, err = fdbkv.Open(file); err != nil {
			closeAll()
			if errors.Is(err, fdbkv.ErrNotBuilt) {
				return nil, tuple.Subspace{}, fmt.Errorf("this binary has no FoundationDB support: build it with -tags fdb to use -clusters: %w", err)
			}
			return nil, tuple.Subspace{}, fmt.Errorf("open FoundationDB cluster %s (%s): %w", name, file, err)
		}
		out = append(out, NamedDB{Name: name, DB: db})
	}
	return out, space, nil
}

// ParseSubspace reads the -subspace syntax: comma-separated elements,
// optionally in parentheses; an element that parses as an integer is an
// int64, a double-quoted one is a Go string literal, anything else a string.
// "app,jobs" is ("app", "jobs").
func ParseSubspace(s string) (tuple.Subspace, error) {
	t, err := tuple.ParsePrefix(s)
	if err != nil {
		return tuple.Subspace{}, fmt.Errorf("%w: %w", ErrFlags, err)
	}
	return tuple.FromTuple(t), nil
}
