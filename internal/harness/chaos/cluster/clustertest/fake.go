// Package clustertest fakes an FDB installation for the tests of package
// cluster and of the chaos faults, so that starting, breaking and stopping
// a cluster is tested where FoundationDB is not installed: fdbserver and
// fdbcli are the test binary itself (Install links them), run as a
// process that waits to be killed and as a command that answers from the
// cluster's state file (status json with roles by class, "Database
// created", exclude, include, coordinators rewriting the cluster file).
// What it cannot show is how a real cluster recovers: that is what
// `quickbench chaos -fdb-bin` is for.
package clustertest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/quickfdb/quickfdb/internal/harness/chaos/cluster"
)

// Env makes the test binary act as the fake fdbserver or fdbcli.
const Env = "QUICKFDB_FAKE_FDB"

// Main runs the fake when the test binary was started as fdbserver or
// fdbcli with Env set; call it first in TestMain.
func Main() {
	if os.Getenv(Env) == "" {
		return
	}
	switch filepath.Base(os.Args[0]) {
	case "fdbserver":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		os.Exit(0)
	case "fdbcli":
		if err := cli(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "ERROR:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// Install links fdbserver and fdbcli in a new directory to the test
// binary, sets Env for the children, and returns the directory.
func Install(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"fdbserver", "fdbcli"} {
		if err := os.Symlink(self, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(Env, "1")
	return dir
}

// Log returns the commands the fake fdbcli ran for the cluster in dir.
func Log(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "fdbcli.log"))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func cli(args []string) error {
	var cf, cmd string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-C":
			cf = args[i+1]
		case "--exec":
			cmd = args[i+1]
		}
	}
	dir := filepath.Dir(cf)
	if f, err := os.OpenFile(filepath.Join(dir, "fdbcli.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintln(f, cmd)
		f.Close()
	}
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return fmt.Errorf("no command")
	}
	switch f[0] {
	case "configure":
		fmt.Println("Database created")
	case "status":
		return status(dir, cf)
	case "exclude":
		for _, a := range f[1:] {
			fmt.Printf("  %s  ---- Successfully excluded. It is now safe to remove this process from the cluster.\n", a)
		}
	case "include":
	case "coordinators":
		b, err := os.ReadFile(cf)
		if err != nil {
			return err
		}
		desc, _, _ := strings.Cut(strings.TrimSpace(string(b)), "@")
		if err := os.WriteFile(cf, []byte(desc+"@"+strings.Join(f[1:], ",")+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Println("Coordination state changed")
	default:
		return fmt.Errorf("the fake fdbcli does not know %q", cmd)
	}
	return nil
}

// status prints a healthy status json: storage processes hold "storage",
// transaction ones "log", the first stateless one "cluster_controller"
// and "master", the others "resolver".
func status(dir, cf string) error {
	c, err := cluster.Load(dir)
	if err != nil {
		return err
	}
	type role struct {
		Role string `json:"role"`
	}
	type proc struct {
		Address string `json:"address"`
		Class   string `json:"class_type"`
		Roles   []role `json:"roles"`
	}
	procs := map[string]proc{}
	cc := false
	for _, p := range c.Procs {
		var roles []role
		switch p.Class {
		case cluster.ClassStorage:
			roles = []role{{"storage"}}
		case cluster.ClassTransaction:
			roles = []role{{"log"}}
		default:
			if !cc {
				roles, cc = []role{{"cluster_controller"}, {"master"}}, true
			} else {
				roles = []role{{"resolver"}}
			}
		}
		procs[p.Name] = proc{Address: p.Addr, Class: p.Class, Roles: roles}
	}
	coords, err := c.Coordinators()
	if err != nil {
		return err
	}
	type coord struct {
		Address   string `json:"address"`
		Reachable bool   `json:"reachable"`
	}
	var cs []coord
	for _, a := range coords {
		cs = append(cs, coord{a, true})
	}
	doc := map[string]any{
		"client": map[string]any{
			"database_status": map[string]bool{"available": true, "healthy": true},
			"coordinators":    map[string]any{"coordinators": cs, "quorum_reachable": true},
		},
		"cluster": map[string]any{
			"recovery_state": map[string]string{"name": "fully_recovered"},
			"data":           map[string]any{"state": map[string]any{"healthy": true, "name": "healthy"}},
			"processes":      procs,
		},
	}
	return json.NewEncoder(os.Stdout).Encode(doc)
}
