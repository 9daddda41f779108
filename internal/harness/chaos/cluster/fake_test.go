package cluster_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/internal/harness/chaos/cluster"
	"github.com/quickfdb/quickfdb/internal/harness/chaos/cluster/clustertest"
)

func TestMain(m *testing.M) {
	clustertest.Main()
	os.Exit(m.Run())
}

// Start, find a role's holder, kill and restart it, exclude and include,
// change the coordinators and stop, against the fake installation.
func TestClusterOnFakeFDB(t *testing.T) {
	bin := clustertest.Install(t)
	dir := t.TempDir()
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Config{Bin: bin, Dir: dir, HealthyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, p := range c.Procs {
		if !c.Alive(p) {
			t.Fatalf("%s not alive after Start", p.Name)
		}
	}
	if got := clustertest.Log(dir); len(got) < 2 || got[0] != "configure new double ssd" || got[1] != "status json" {
		t.Errorf("fdbcli commands %q: want configure new double ssd, then status json", got)
	}
	cc, err := c.HolderOf(ctx, cluster.RoleClusterController)
	if err != nil || cc.Name != "stateless1" {
		t.Fatalf("cluster controller %v, %v", cc, err)
	}
	if err := c.Kill(cc); err != nil {
		t.Fatal(err)
	}
	if c.Alive(cc) {
		t.Fatal("alive after Kill")
	}
	if err := c.StartProc(cc); err != nil || !c.Alive(cc) {
		t.Fatalf("restart: %v, alive %v", err, c.Alive(cc))
	}
	st := c.OfClass(cluster.ClassStorage)[2]
	if err := c.Exclude(ctx, st, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.Include(ctx, st); err != nil {
		t.Fatal(err)
	}
	old, _ := c.Coordinators()
	next := []*cluster.Proc{c.OfClass(cluster.ClassStorage)[1], c.OfClass(cluster.ClassTransaction)[0], c.OfClass(cluster.ClassStateless)[0]}
	if err := c.SetCoordinators(ctx, next); err != nil {
		t.Fatal(err)
	}
	now, _ := c.Coordinators()
	if slices.Equal(old, now) || !slices.Contains(now, next[0].Addr) {
		t.Errorf("coordinators %v -> %v", old, now)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Procs {
		if c.Alive(p) {
			t.Errorf("%s alive after Stop", p.Name)
		}
	}
}

// The script's commands: start detaches the processes and records them;
// status, kill, restart and stop find them from the directory.
func TestMainOnFakeFDB(t *testing.T) {
	bin := clustertest.Install(t)
	dir := t.TempDir()
	ctx := context.Background()
	var out, errw strings.Builder
	if err := cluster.Main(ctx, []string{"start", "-fdb-bin", bin, "-dir", dir}, &out, &errw); err != nil {
		t.Fatalf("start: %v\n%s", err, errw.String())
	}
	t.Cleanup(func() { _ = cluster.Main(ctx, []string{"stop", "-dir", dir}, &out, &errw) })
	if got := strings.TrimSpace(out.String()); got != dir+"/fdb.cluster" {
		t.Errorf("start printed %q, want the cluster file", got)
	}
	out.Reset()
	if err := cluster.Main(ctx, []string{"status", "-dir", dir}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "stateless1") || !strings.Contains(s, "cluster_controller,master") || !strings.Contains(s, "database: healthy") {
		t.Errorf("status:\n%s", s)
	}
	out.Reset()
	if err := cluster.Main(ctx, []string{"kill", "-dir", dir, "log"}, &out, &errw); err != nil || !strings.HasPrefix(out.String(), "killed log") {
		t.Fatalf("kill log: %v %q", err, out.String())
	}
	// The holder first by address: log1 or log2, whichever port is lower.
	killed, _, _ := strings.Cut(strings.TrimPrefix(out.String(), "killed "), " ")
	c, err := cluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Procs {
		if c.Alive(p) == (p.Name == killed) {
			t.Errorf("after kill log (%s): %s alive %v", killed, p.Name, c.Alive(p))
		}
	}
	if err := cluster.Main(ctx, []string{"restart", "-dir", dir, killed}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Main(ctx, []string{"restart", "-dir", dir, killed}, &out, &errw); err == nil || !strings.Contains(err.Error(), "is running") {
		t.Errorf("restart of a running process: %v", err)
	}
	c, _ = cluster.Load(dir)
	if !c.Alive(c.ByName(killed)) {
		t.Fatalf("%s not running after restart", killed)
	}
	if err := cluster.Main(ctx, []string{"stop", "-dir", dir}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Procs {
		if c.Alive(p) {
			t.Errorf("%s alive after stop", p.Name)
		}
	}
	if _, err := cluster.Load(dir); err == nil {
		t.Error("the state file is left after stop")
	}
}
