package chaos

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

// Each step of the cluster schedule on the fake installation: the kills
// take the holder of the role in status json and start it again, the
// whole-cluster restart kills every process, the exclusion spares the
// coordinators, and the coordinator change moves one within its class.
func TestClusterFaultsOnFakeFDB(t *testing.T) {
	bin := clustertest.Install(t)
	dir := t.TempDir()
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Config{Bin: bin, Dir: dir, HealthyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	faults := ClusterFaults(c, 10*time.Millisecond, time.Minute)
	var names []string
	kills := 0
	for _, f := range faults {
		names = append(names, f.Name)
		kills += f.Kills
	}
	if want := []string{"kill storage", "kill log", "kill cluster controller", "restart the whole cluster", "exclude and include", "change coordinators"}; !slices.Equal(names, want) {
		t.Fatalf("schedule %q, want %q", names, want)
	}
	if kills != 3+len(c.Procs) {
		t.Errorf("%d kills in a first round, want %d", kills, 3+len(c.Procs))
	}
	coords, _ := c.Coordinators()
	for i, f := range faults {
		pids := map[string]int{}
		for _, p := range c.Procs {
			pids[p.Name] = p.PID
		}
		detail, err := f.Do(ctx)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		t.Logf("%s: %s", f.Name, detail)
		switch i {
		case 2:
			if !strings.Contains(detail, "stateless1") || c.ByName("stateless1").PID == pids["stateless1"] {
				t.Errorf("the cluster controller's process was not killed and restarted: %s", detail)
			}
		case 3:
			for _, p := range c.Procs {
				if p.PID == pids[p.Name] {
					t.Errorf("%s kept its pid through the whole restart", p.Name)
				}
			}
		case 4:
			if strings.Contains(detail, "storage1 ") || !strings.Contains(detail, "excluded storage") {
				t.Errorf("exclusion %q: want a storage process that is no coordinator", detail)
			}
		case 5:
			now, _ := c.Coordinators()
			if slices.Equal(now, coords) || len(now) != 3 {
				t.Errorf("coordinators %v -> %v", coords, now)
			}
		}
		for _, p := range c.Procs {
			if !c.Alive(p) {
				t.Errorf("after %s: %s is down", f.Name, p.Name)
			}
		}
	}
}
