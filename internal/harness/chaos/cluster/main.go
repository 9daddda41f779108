package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Usage is scripts/fdb-cluster's usage.
const Usage = `usage: fdb-cluster start  -fdb-bin DIR [-dir DIR] [-storage 3 -log 2 -stateless 2] [-redundancy double] [-engine ssd]
       fdb-cluster status -dir DIR           (roles per process, health; -json for status json)
       fdb-cluster kill   -dir DIR ROLE|NAME  (SIGKILL the process holding ROLE: cluster_controller, log, storage, master; or a process by name)
       fdb-cluster restart -dir DIR NAME      (start a killed process again on its data directory)
       fdb-cluster stop   -dir DIR            (SIGTERM every process; the directory is kept)
start prints the cluster file's path on its last line.`

// Main runs scripts/fdb-cluster's command line.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(Usage)
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("fdb-cluster "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the cluster's directory (start: default a new temporary directory)")
	cfg := Config{Out: stderr, Detach: true}
	asJSON := false
	switch cmd {
	case "start":
		fs.StringVar(&cfg.Bin, "fdb-bin", os.Getenv("QUICKFDB_FDB_BIN"), "directory holding fdbserver and fdbcli (default $QUICKFDB_FDB_BIN)")
		fs.IntVar(&cfg.Storage, "storage", 3, "storage-class processes")
		fs.IntVar(&cfg.Log, "log", 2, "transaction-class processes (logs)")
		fs.IntVar(&cfg.Stateless, "stateless", 2, "stateless-class processes (cluster controller, proxies, resolver...)")
		fs.StringVar(&cfg.Redundancy, "redundancy", "double", "redundancy mode of configure new")
		fs.StringVar(&cfg.Engine, "engine", "ssd", "storage engine of configure new")
		fs.DurationVar(&cfg.HealthyTimeout, "timeout", 3*time.Minute, "bound on the wait for a healthy database")
	case "status":
		fs.BoolVar(&asJSON, "json", false, "print status json as fdbcli does")
	case "kill", "restart", "stop":
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, Usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, Usage)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cmd == "start" {
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		made := false
		if *dir == "" {
			d, err := os.MkdirTemp("", "fdb-cluster-")
			if err != nil {
				return err
			}
			*dir, made = d, true
		}
		cfg.Dir = *dir
		c, err := Start(ctx, cfg)
		if err != nil {
			if made {
				// A start that failed before writing anything leaves no
				// empty directory behind; one that started processes keeps
				// their logs, which the error names.
				_ = os.Remove(*dir)
			}
			return err
		}
		for _, p := range c.Procs {
			fmt.Fprintf(stderr, "fdb-cluster: %-10s %-11s %s pid %d\n", p.Name, p.Class, p.Addr, p.PID)
		}
		fmt.Fprintln(stdout, c.ClusterFile)
		return nil
	}
	if *dir == "" {
		return fmt.Errorf("%s needs -dir (the directory start used)", cmd)
	}
	c, err := Load(*dir)
	if err != nil {
		return err
	}
	c.SetLog(stderr)
	switch cmd {
	case "stop":
		return c.Stop()
	case "status":
		if asJSON {
			out, err := c.Cli(ctx, "status json", 10*time.Second)
			fmt.Fprint(stdout, out)
			return err
		}
		s, err := c.Status(ctx)
		if err != nil {
			return err
		}
		return c.WriteStatus(stdout, s)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%s takes one argument\n%s", cmd, Usage)
	}
	target := fs.Arg(0)
	p := c.ByName(target)
	if cmd == "restart" {
		if p == nil {
			return fmt.Errorf("no process named %q", target)
		}
		if c.Alive(p) {
			return fmt.Errorf("%s (pid %d) is running", p.Name, p.PID)
		}
		if err := c.StartProc(p); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "started %s (%s) again: pid %d\n", p.Name, p.Addr, p.PID)
		return nil
	}
	if p == nil {
		if p, err = c.HolderOf(ctx, target); err != nil {
			return err
		}
	}
	if err := c.Kill(p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "killed %s (%s, pid %d) with SIGKILL; `fdb-cluster restart -dir %s %s` starts it again\n", p.Name, p.Addr, p.PID, c.Dir, p.Name)
	return nil
}

// WriteStatus prints each process with its class, state and roles, then
// the health summary and the coordinators.
func (c *Cluster) WriteStatus(w io.Writer, s *Status) error {
	for _, p := range c.Procs {
		state := "down"
		if c.Alive(p) {
			state = fmt.Sprintf("pid %d", p.PID)
		}
		roles := strings.Join(s.RolesOf(p.Addr), ",")
		if roles == "" {
			roles = "-"
		}
		ex := ""
		for _, e := range s.Excluded() {
			if e == p.Addr {
				ex = " (excluded)"
			}
		}
		fmt.Fprintf(w, "%-10s %-11s %-16s %-10s %s%s\n", p.Name, p.Class, p.Addr, state, roles, ex)
	}
	ok, why := s.Healthy()
	if ok {
		why = "healthy"
	}
	fmt.Fprintf(w, "database: %s; recovery state %s; data %s; database_status.healthy %v\n", why, orNone(s.Cluster.RecoveryState.Name), orNone(s.Cluster.Data.State.Name), s.Client.DatabaseStatus.Healthy)
	if m := s.Messages(); len(m) > 0 {
		fmt.Fprintf(w, "messages: %s\n", strings.Join(m, ", "))
	}
	_, err := fmt.Fprintf(w, "coordinators: %s\n", strings.Join(s.Coordinators(), " "))
	return err
}
