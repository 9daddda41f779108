//go:build fdb

package fdbtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/childproc"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
)

// Environment variables read by the fdb-tagged build.
const (
	// EnvClusterFile names the cluster file of a running cluster to test
	// against (the variable libfdb_c itself reads).
	EnvClusterFile = "FDB_CLUSTER_FILE"
	// EnvBinDir names a directory holding fdbserver and fdbcli.
	EnvBinDir = "QUICKFDB_FDB_BIN"
	// EnvServerArgs adds space-separated arguments to fdbserver.
	EnvServerArgs = "QUICKFDB_FDBSERVER_ARGS"
	// EnvKeep keeps the throwaway server's directory after Main.
	EnvKeep = "QUICKFDB_KEEP_FDB"
)

// ProbeTimeout bounds the check that a cluster answers.
const ProbeTimeout = 3 * time.Second

// StartTimeout bounds starting and configuring the throwaway fdbserver.
const StartTimeout = 90 * time.Second

type backend struct {
	db   kv.Database
	skip string // non-empty: skip the tests with this message
	err  error  // non-nil: fail the tests with it
	srv  *server
}

var (
	backendMu   sync.Mutex
	backendDone bool
	theBackend  backend
)

func openDB(t testing.TB) kv.Database {
	t.Helper()
	backendMu.Lock()
	if !backendDone {
		theBackend = findBackend()
		backendDone = true
	}
	b := theBackend
	backendMu.Unlock()
	switch {
	case b.err != nil:
		t.Fatalf("fdbtest: %v", b.err)
	case b.skip != "":
		t.Skip(b.skip)
	}
	return b.db
}

// ClusterFile returns the cluster file of the database Open returns, for
// tests that start processes of their own against it: FDB_CLUSTER_FILE's,
// or the throwaway server's. It skips or fails t as Open does.
func ClusterFile(t testing.TB) string {
	t.Helper()
	openDB(t)
	backendMu.Lock()
	defer backendMu.Unlock()
	if theBackend.srv != nil {
		return theBackend.srv.clusterFile
	}
	return os.Getenv(EnvClusterFile)
}

func shutdown() {
	backendMu.Lock()
	defer backendMu.Unlock()
	if theBackend.srv != nil {
		theBackend.srv.stop(os.Getenv(EnvKeep) != "")
		theBackend.srv = nil
	}
}

func findBackend() backend {
	if cf := os.Getenv(EnvClusterFile); cf != "" {
		db, err := fdbkv.Open(cf)
		if err != nil {
			return backend{err: fmt.Errorf("%s=%s: %w", EnvClusterFile, cf, err)}
		}
		if err := probe(db); err != nil {
			return backend{err: fmt.Errorf("%s=%s: the cluster does not answer (probed with a %v transaction timeout): %w", EnvClusterFile, cf, ProbeTimeout, err)}
		}
		return backend{db: db}
	}
	bins, missing := findBinaries()
	if len(missing) > 0 {
		return backend{skip: fmt.Sprintf("FoundationDB not found: set %s or put fdbserver and fdbcli on PATH (or %s); the fdb-tagged tests need libfdb_c 7.3 (missing: %s)",
			EnvClusterFile, EnvBinDir, strings.Join(missing, ", "))}
	}
	srv, db, err := startServer(bins)
	if err != nil {
		return backend{err: fmt.Errorf("starting a throwaway fdbserver (%s): %w", bins.server, err)}
	}
	return backend{db: db, srv: srv}
}

// probe reads from db with a transaction timeout, retrying retryable errors
// within it: an unreachable cluster makes reads block, not fail.
func probe(db kv.Database) error {
	tr, err := db.CreateTransaction()
	if err != nil {
		return err
	}
	if err := tr.Options().SetTimeout(ProbeTimeout.Milliseconds()); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout+2*time.Second)
	defer cancel()
	return kv.RetryRead(ctx, tr, func(rt kv.ReadTransaction) error {
		if _, err := rt.GetReadVersion().Get(); err != nil {
			return err
		}
		_, err := rt.Get([]byte("fdbtest probe")).Get()
		return err
	})
}

type binaries struct{ server, cli string }

// findBinaries looks for fdbserver and fdbcli in $QUICKFDB_FDB_BIN, else on
// PATH and in the directories FoundationDB's packages install to.
func findBinaries() (binaries, []string) {
	var b binaries
	var missing []string
	if dir := os.Getenv(EnvBinDir); dir != "" {
		b.server = executable(filepath.Join(dir, "fdbserver"))
		b.cli = executable(filepath.Join(dir, "fdbcli"))
		if b.server == "" {
			missing = append(missing, "fdbserver in "+EnvBinDir+"="+dir)
		}
		if b.cli == "" {
			missing = append(missing, "fdbcli in "+EnvBinDir+"="+dir)
		}
		return b, missing
	}
	b.server = lookPath("fdbserver")
	b.cli = lookPath("fdbcli")
	if b.server == "" {
		missing = append(missing, "fdbserver")
	}
	if b.cli == "" {
		missing = append(missing, "fdbcli")
	}
	return b, missing
}

func lookPath(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"} {
		if p := executable(filepath.Join(dir, name)); p != "" {
			return p
		}
	}
	return ""
}

func executable(path string) string {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return ""
	}
	return path
}

// server is a throwaway single-process fdbserver.
type server struct {
	dir         string
	clusterFile string
	proc        *os.Process
	exited      chan struct{} // closed when the process has exited
	waitErr     error         // valid after exited is closed
	stopOnce    sync.Once
}

func startServer(bins binaries) (*server, kv.Database, error) {
	deadline := time.Now().Add(StartTimeout)
	s, err := launchServer(bins, deadline)
	if err != nil {
		return nil, nil, err
	}
	db, err := s.connect(deadline)
	if err != nil {
		s.stop(true) // keep the logs the error points to
		return nil, nil, err
	}
	return s, db, nil
}

// launchServer starts fdbserver in a fresh temporary directory and
// configures a new single-process in-memory database on it.
func launchServer(bins binaries, deadline time.Time) (*server, error) {
	dir, err := os.MkdirTemp("", "quickfdb-fdbtest-")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, exited: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			s.stop(true) // keep the logs the error points to
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.clusterFile = filepath.Join(dir, "fdb.cluster")
	// description:ID@address; both alphanumeric.
	if err := os.WriteFile(s.clusterFile, []byte("fdbtest:"+randomID()+"@"+addr+"\n"), 0o644); err != nil {
		return nil, err
	}
	data, logs := filepath.Join(dir, "data"), filepath.Join(dir, "logs")
	for _, d := range []string{data, logs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	args := []string{"-p", addr, "-C", s.clusterFile, "-d", data, "-L", logs}
	args = append(args, strings.Fields(os.Getenv(EnvServerArgs))...)
	out, err := os.Create(filepath.Join(dir, "fdbserver.out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bins.server, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := s.run(cmd, out); err != nil {
		return nil, fmt.Errorf("fdbserver %s: %w", strings.Join(args, " "), err)
	}
	if err := s.configure(bins.cli, deadline); err != nil {
		return nil, fmt.Errorf("%w (logs in %s)", err, dir)
	}
	ok = true
	return s, nil
}

// connect opens the server's database and waits until it answers.
func (s *server) connect(deadline time.Time) (kv.Database, error) {
	db, err := fdbkv.Open(s.clusterFile)
	if err != nil {
		return nil, err
	}
	for {
		err := probe(db)
		if err == nil {
			return db, nil
		}
		if s.hasExited() {
			return nil, fmt.Errorf("fdbserver exited (%v); see %s", s.waitErr, s.dir)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the new database does not answer after %v: %w (logs in %s)", StartTimeout, err, s.dir)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// run starts cmd so that it dies with the test binary (childproc.Start).
func (s *server) run(cmd *exec.Cmd, out *os.File) error {
	err := childproc.Start(cmd, func() {
		s.waitErr = cmd.Wait()
		out.Close()
		close(s.exited)
	})
	if err != nil {
		close(s.exited)
		out.Close()
		return err
	}
	s.proc = cmd.Process
	return nil
}

func (s *server) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// configure runs "configure new single memory" until it succeeds: the first
// tries may come before the server listens.
func (s *server) configure(cli string, deadline time.Time) error {
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, cli, "-C", s.clusterFile, "--timeout", "20", "--exec", "configure new single memory")
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		cancel()
		text := buf.String()
		if strings.Contains(text, "Database created") || strings.Contains(text, "already exists") {
			return nil
		}
		last = strings.TrimSpace(text)
		if err != nil {
			last = fmt.Sprintf("%v: %s", err, last)
		}
		if s.hasExited() {
			return fmt.Errorf("fdbserver exited (%v); fdbcli said: %s", s.waitErr, last)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fdbcli configure new single memory did not succeed in time: %s", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// stop kills the server, waits for it and removes its directory unless
// keep is set.
func (s *server) stop(keep bool) {
	s.stopOnce.Do(func() {
		if s.proc != nil {
			_ = s.proc.Kill()
			select {
			case <-s.exited:
			case <-time.After(10 * time.Second):
			}
		}
		if keep {
			fmt.Fprintf(os.Stderr, "fdbtest: kept the throwaway fdbserver's directory %s\n", s.dir)
			return
		}
		_ = os.RemoveAll(s.dir)
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("fdbtest: no TCP port")
	}
	return addr.Port, nil
}
