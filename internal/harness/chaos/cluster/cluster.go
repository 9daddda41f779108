// Package cluster starts and breaks a real multi-process FoundationDB
// cluster on loopback, from an installation's fdbserver and fdbcli: the
// cluster the chaos run (package chaos) runs the queue on, and what
// scripts/fdb-cluster starts by hand. It never builds or installs
// FoundationDB, and needs no client library (it talks to the cluster
// through fdbcli), so it compiles and its parsing is tested everywhere.
//
// A cluster is Storage + Log + Stateless fdbserver processes (3, 2 and 2 by
// default) on distinct 127.0.0.1 ports, each with its own data and log
// directory under Dir, a process class (storage, transaction, stateless)
// and a zone and machine locality of its own: processes of one host share
// a machine ID otherwise (fdbserver reads it from shared memory), and
// double replication would find a single fault domain. Three of them are
// coordinators (one of each class). Start writes the cluster file, starts
// the processes, runs `configure new double ssd` and waits until status
// json says the database is available, fully recovered and its data fully
// replicated (Status.Healthy).
//
// Dir/cluster.json records the processes, so that a later command (stop,
// status, kill from scripts/fdb-cluster) finds them.
package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/internal/childproc"
)

// Process classes (fdbserver --class).
const (
	ClassStorage     = "storage"
	ClassTransaction = "transaction"
	ClassStateless   = "stateless"
)

// Config describes a cluster.
type Config struct {
	// Bin holds fdbserver and fdbcli.
	Bin string
	// Dir receives the cluster file, state file and each process's
	// directories; it must not hold a cluster already.
	Dir string
	// Processes of each class (defaults 3, 2, 2).
	Storage, Log, Stateless int
	// Redundancy and Engine of `configure new` (defaults double, ssd).
	Redundancy, Engine string
	// CacheMemory is each process's --cache-memory (default 256MiB: seven
	// processes share a small machine).
	CacheMemory string
	// Detach starts the processes in sessions of their own that outlive
	// this program (scripts/fdb-cluster start); otherwise they die with it.
	Detach bool
	// HealthyTimeout bounds the wait for a healthy database (default 3 min).
	HealthyTimeout time.Duration
	// Out receives progress lines (nil: discarded).
	Out io.Writer
}

func (c *Config) defaults() {
	if c.Storage == 0 {
		c.Storage = 3
	}
	if c.Log == 0 {
		c.Log = 2
	}
	if c.Stateless == 0 {
		c.Stateless = 2
	}
	if c.Redundancy == "" {
		c.Redundancy = "double"
	}
	if c.Engine == "" {
		c.Engine = "ssd"
	}
	if c.CacheMemory == "" {
		c.CacheMemory = "256MiB"
	}
	if c.HealthyTimeout == 0 {
		c.HealthyTimeout = 3 * time.Minute
	}
}

// Proc is one fdbserver process of the cluster.
type Proc struct {
	Name  string `json:"name"`
	Class string `json:"class"`
	Addr  string `json:"addr"` // 127.0.0.1:port
	Dir   string `json:"dir"`  // holds data/, logs/, fdbserver.out
	PID   int    `json:"pid"`

	mu     sync.Mutex
	exited chan struct{} // for processes this program owns; nil when detached or loaded
}

// Cluster is a started (or loaded) cluster.
type Cluster struct {
	Bin         string  `json:"bin"`
	Dir         string  `json:"dir"`
	ClusterFile string  `json:"cluster_file"`
	CacheMemory string  `json:"cache_memory"`
	Detach      bool    `json:"detach"`
	Procs       []*Proc `json:"procs"`

	log io.Writer
}

// StateFile is the name of the file under Dir that records the cluster.
const StateFile = "cluster.json"

// ErrNoCluster is returned by Load for a directory that holds none.
var ErrNoCluster = errors.New("cluster: no cluster recorded here")

// Args are the fdbserver arguments of p.
func (c *Cluster) Args(p *Proc) []string {
	return []string{
		"-p", p.Addr, "-l", p.Addr, "-C", c.ClusterFile,
		"-d", filepath.Join(p.Dir, "data"), "-L", filepath.Join(p.Dir, "logs"),
		"--class", p.Class,
		"--locality-zoneid", "z-" + p.Name, "--locality-machineid", "m-" + p.Name,
		"--cache-memory", c.CacheMemory,
	}
}

// Plan lays the cluster out without starting anything: names, classes,
// free ports, directories, the cluster file's text (its first process of
// each class a coordinator).
func Plan(cfg Config) (*Cluster, string, error) {
	cfg.defaults()
	if cfg.Storage < 1 || cfg.Log < 1 || cfg.Stateless < 1 {
		return nil, "", fmt.Errorf("cluster: want at least one process of each class, got %d storage, %d log, %d stateless", cfg.Storage, cfg.Log, cfg.Stateless)
	}
	if cfg.Dir == "" {
		return nil, "", errors.New("cluster: no directory")
	}
	c := &Cluster{Bin: cfg.Bin, Dir: cfg.Dir, ClusterFile: filepath.Join(cfg.Dir, "fdb.cluster"), CacheMemory: cfg.CacheMemory, Detach: cfg.Detach, log: cfg.Out}
	add := func(prefix, class string, n int) error {
		for i := 1; i <= n; i++ {
			port, err := freePort()
			if err != nil {
				return err
			}
			name := fmt.Sprintf("%s%d", prefix, i)
			c.Procs = append(c.Procs, &Proc{Name: name, Class: class, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: filepath.Join(cfg.Dir, name)})
		}
		return nil
	}
	if err := errors.Join(add("storage", ClassStorage, cfg.Storage), add("log", ClassTransaction, cfg.Log), add("stateless", ClassStateless, cfg.Stateless)); err != nil {
		return nil, "", err
	}
	var coords []string
	for _, class := range []string{ClassStorage, ClassTransaction, ClassStateless} {
		coords = append(coords, c.OfClass(class)[0].Addr)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	text := "chaos:" + hex.EncodeToString(b[:]) + "@" + strings.Join(coords, ",") + "\n"
	return c, text, nil
}

// Start starts a new cluster and waits until it is healthy.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	cfg.defaults()
	for _, name := range []string{"fdbserver", "fdbcli"} {
		if fi, err := os.Stat(filepath.Join(cfg.Bin, name)); err != nil || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("cluster: no executable %s in %q (-fdb-bin: the directory holding fdbserver and fdbcli)", name, cfg.Bin)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, StateFile)); err == nil {
		return nil, fmt.Errorf("cluster: %s already holds a cluster (stop it, or choose another directory)", cfg.Dir)
	}
	c, text, err := Plan(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.ClusterFile, []byte(text), 0o644); err != nil {
		return nil, err
	}
	for _, p := range c.Procs {
		for _, d := range []string{"data", "logs"} {
			if err := os.MkdirAll(filepath.Join(p.Dir, d), 0o755); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range c.Procs {
		if err := c.StartProc(p); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.save(); err != nil {
		c.Stop()
		return nil, err
	}
	c.logf("started %d fdbserver processes; cluster file %s", len(c.Procs), c.ClusterFile)
	conf := fmt.Sprintf("configure new %s %s", cfg.Redundancy, cfg.Engine)
	if err := c.configure(ctx, conf, cfg.HealthyTimeout); err != nil {
		c.Stop()
		return nil, err
	}
	c.logf("%s: database created", conf)
	if err := c.WaitHealthy(ctx, cfg.HealthyTimeout); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Load reads the cluster recorded in dir.
func Load(dir string) (*Cluster, error) {
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoCluster, dir)
	}
	if err != nil {
		return nil, err
	}
	var c Cluster
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", filepath.Join(dir, StateFile), err)
	}
	return &c, nil
}

// SetLog sets where progress lines go.
func (c *Cluster) SetLog(w io.Writer) { c.log = w }

func (c *Cluster) save() error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(c.Dir, StateFile))
}

func (c *Cluster) logf(format string, args ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, "fdb-cluster: "+format+"\n", args...)
	}
}

// OfClass returns the processes of class, in order.
func (c *Cluster) OfClass(class string) []*Proc {
	var out []*Proc
	for _, p := range c.Procs {
		if p.Class == class {
			out = append(out, p)
		}
	}
	return out
}

// ByAddr returns the process listening on addr.
func (c *Cluster) ByAddr(addr string) *Proc {
	for _, p := range c.Procs {
		if p.Addr == addr {
			return p
		}
	}
	return nil
}

// ByName returns the process named name.
func (c *Cluster) ByName(name string) *Proc {
	for _, p := range c.Procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// StartProc starts p's fdbserver on its data directory (a first start or a
// restart after a kill).
func (c *Cluster) StartProc(p *Proc) error {
	out, err := os.OpenFile(filepath.Join(p.Dir, "fdbserver.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.Bin, "fdbserver"), c.Args(p)...)
	cmd.Stdout, cmd.Stderr = out, out
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err := cmd.Start()
		out.Close()
		if err != nil {
			return fmt.Errorf("cluster: start %s: %w", p.Name, err)
		}
		p.PID = cmd.Process.Pid
		p.exited = nil
		_ = cmd.Process.Release()
		return c.save()
	}
	exited := make(chan struct{})
	err = childproc.Start(cmd, func() {
		_ = cmd.Wait()
		out.Close()
		close(exited)
	})
	if err != nil {
		out.Close()
		return fmt.Errorf("cluster: start %s: %w", p.Name, err)
	}
	p.PID, p.exited = cmd.Process.Pid, exited
	return nil
}

// Alive says whether p's process runs.
func (c *Cluster) Alive(p *Proc) bool {
	p.mu.Lock()
	pid, exited := p.PID, p.exited
	p.mu.Unlock()
	if exited != nil {
		select {
		case <-exited:
			return false
		default:
			return true
		}
	}
	return pid > 0 && isFDBServer(pid)
}

// isFDBServer says whether pid is a live fdbserver (not a zombie, not a
// reused pid).
func isFDBServer(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open || close+2 >= len(s) {
		return false
	}
	return s[open+1:close] == "fdbserver" && s[close+2] != 'Z'
}

// Kill sends p SIGKILL and waits (up to 10 s) until it is gone.
func (c *Cluster) Kill(p *Proc) error { return c.signal(p, syscall.SIGKILL) }

func (c *Cluster) signal(p *Proc, sig syscall.Signal) error {
	p.mu.Lock()
	pid, exited := p.PID, p.exited
	p.mu.Unlock()
	if !c.Alive(p) {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cluster: signal %s (pid %d): %w", p.Name, pid, err)
	}
	deadline := time.After(10 * time.Second)
	for c.Alive(p) {
		select {
		case <-exited:
		case <-deadline:
			return fmt.Errorf("cluster: %s (pid %d) still runs 10 s after %v", p.Name, pid, sig)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// Stop ends every process: SIGTERM, then SIGKILL for any left after 10 s.
func (c *Cluster) Stop() error {
	var errs []error
	for _, p := range c.Procs {
		if err := c.signal(p, syscall.SIGTERM); err != nil {
			if err := c.Kill(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.Remove(filepath.Join(c.Dir, StateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Cli runs `fdbcli --exec cmd` against the cluster, bounded by timeout,
// and returns what it printed.
func (c *Cluster) Cli(ctx context.Context, cmd string, timeout time.Duration) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	secs := max(int(timeout/time.Second), 1)
	x := exec.CommandContext(cctx, filepath.Join(c.Bin, "fdbcli"), "-C", c.ClusterFile, "--timeout", strconv.Itoa(secs), "--exec", cmd)
	var buf bytes.Buffer
	x.Stdout, x.Stderr = &buf, &buf
	err := x.Run()
	out := buf.String()
	if err != nil {
		return out, fmt.Errorf("cluster: fdbcli %q: %w: %s", cmd, err, truncate(strings.TrimSpace(out), 500))
	}
	return out, nil
}

// Status reads status json.
func (c *Cluster) Status(ctx context.Context) (*Status, error) {
	out, err := c.Cli(ctx, "status json", 10*time.Second)
	if err != nil {
		return nil, err
	}
	return ParseStatus([]byte(out))
}

// configure runs conf until fdbcli says the database was created (the
// processes may still be joining), bounded by timeout.
func (c *Cluster) configure(ctx context.Context, conf string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		out, err := c.Cli(ctx, conf, 30*time.Second)
		if strings.Contains(out, "Database created") {
			return nil
		}
		last = strings.TrimSpace(out)
		if err != nil {
			last = err.Error()
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("cluster: %q did not create the database within %v; fdbcli said: %s (logs under %s)", conf, timeout, last, c.Dir)
}

// WaitHealthy polls status json until the database is available, fully
// recovered and its data fully replicated (Status.Healthy), or fails after
// timeout saying what was still wrong.
func (c *Cluster) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	return c.waitStatus(ctx, timeout, "healthy", func(s *Status) (bool, string) { return s.Healthy() })
}

// WaitAvailable polls status json until the database accepts transactions.
func (c *Cluster) WaitAvailable(ctx context.Context, timeout time.Duration) error {
	return c.waitStatus(ctx, timeout, "available", func(s *Status) (bool, string) {
		return s.Available(), "database unavailable, recovery state " + orNone(s.Cluster.RecoveryState.Name)
	})
}

func (c *Cluster) waitStatus(ctx context.Context, timeout time.Duration, what string, ok func(*Status) (bool, string)) error {
	start := time.Now()
	var why string
	for time.Since(start) < timeout {
		s, err := c.Status(ctx)
		if err != nil {
			why = err.Error()
		} else if good, w := ok(s); good {
			c.logf("%s after %.1fs", what, time.Since(start).Seconds())
			return nil
		} else {
			why = w
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("cluster: not %s after %v: %s (logs under %s)", what, timeout, why, c.Dir)
}

// HolderOf returns the process holding role in status json (the first by
// address when several do).
func (c *Cluster) HolderOf(ctx context.Context, role string) (*Proc, error) {
	s, err := c.Status(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range s.HoldersOf(role) {
		if p := c.ByAddr(a); p != nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("cluster: no process of this cluster holds role %q in status json", role)
}

// Exclude excludes p and waits (up to timeout) until fdbcli says it is
// safe to remove: its data moved to the other storage processes, its roles
// recruited elsewhere.
func (c *Cluster) Exclude(ctx context.Context, p *Proc, timeout time.Duration) error {
	out, err := c.Cli(ctx, "exclude "+p.Addr, timeout)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Successfully excluded") {
		return fmt.Errorf("cluster: exclude %s: fdbcli said: %s", p.Addr, truncate(strings.TrimSpace(out), 500))
	}
	return nil
}

// Include includes p back.
func (c *Cluster) Include(ctx context.Context, p *Proc) error {
	_, err := c.Cli(ctx, "include "+p.Addr, 30*time.Second)
	return err
}

// Coordinators returns the coordinators' addresses, from the cluster file.
func (c *Cluster) Coordinators() ([]string, error) {
	b, err := os.ReadFile(c.ClusterFile)
	if err != nil {
		return nil, err
	}
	return ParseClusterFile(string(b))
}

// ParseClusterFile returns the coordinator addresses of a cluster file's
// text (description:id@addr,addr,...), sorted.
func ParseClusterFile(text string) ([]string, error) {
	line := strings.TrimSpace(text)
	_, addrs, ok := strings.Cut(line, "@")
	if !ok || addrs == "" {
		return nil, fmt.Errorf("cluster: not a cluster file: %q", truncate(line, 200))
	}
	var out []string
	for _, a := range strings.Split(addrs, ",") {
		out = append(out, plainAddr(strings.TrimSpace(a)))
	}
	slices.Sort(out)
	return out, nil
}

// SetCoordinators changes the coordinators to procs (`coordinators ADDR...`),
// which rewrites the cluster file of every process and client that uses it.
func (c *Cluster) SetCoordinators(ctx context.Context, procs []*Proc) error {
	addrs := make([]string, len(procs))
	for i, p := range procs {
		addrs[i] = p.Addr
	}
	out, err := c.Cli(ctx, "coordinators "+strings.Join(addrs, " "), time.Minute)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Coordination state changed") && !strings.Contains(out, "No change") {
		return fmt.Errorf("cluster: coordinators %s: fdbcli said: %s", strings.Join(addrs, " "), truncate(strings.TrimSpace(out), 500))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("cluster: no TCP port")
	}
	return a.Port, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
