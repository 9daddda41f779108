package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// A trimmed status json of a 7.3 cluster mid-recovery, with a warning line
// before the document as fdbcli prints at times.
const sampleStatus = `WARNING: something fdbcli says first
{
  "client": {
    "coordinators": {"coordinators": [{"address": "127.0.0.1:4501", "reachable": true}, {"address": "127.0.0.1:4500:tls", "reachable": false}], "quorum_reachable": true},
    "database_status": {"available": true, "healthy": false},
    "messages": [{"name": "inconsistent_cluster_file"}]
  },
  "cluster": {
    "recovery_state": {"name": "accepting_commits"},
    "data": {"state": {"healthy": false, "name": "healing"}},
    "processes": {
      "a": {"address": "127.0.0.1:4500", "class_type": "storage", "roles": [{"role": "storage"}, {"role": "coordinator"}]},
      "b": {"address": "127.0.0.1:4501", "class_type": "transaction", "roles": [{"role": "log"}]},
      "c": {"address": "127.0.0.1:4502", "class_type": "stateless", "excluded": true, "roles": [{"role": "cluster_controller"}, {"role": "master"}, {"role": "log"}]}
    }
  }
}`

func TestParseStatus(t *testing.T) {
	s, err := ParseStatus([]byte(sampleStatus))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.HoldersOf(RoleLog); !slices.Equal(got, []string{"127.0.0.1:4501", "127.0.0.1:4502"}) {
		t.Errorf("log holders %v", got)
	}
	if got := s.HoldersOf(RoleClusterController); !slices.Equal(got, []string{"127.0.0.1:4502"}) {
		t.Errorf("cluster controller %v", got)
	}
	if got := s.RolesOf("127.0.0.1:4502"); !slices.Equal(got, []string{"cluster_controller", "log", "master"}) {
		t.Errorf("roles of c %v", got)
	}
	if got := s.Coordinators(); !slices.Equal(got, []string{"127.0.0.1:4500", "127.0.0.1:4501"}) {
		t.Errorf("coordinators %v (the :tls suffix must go)", got)
	}
	if got := s.Excluded(); !slices.Equal(got, []string{"127.0.0.1:4502"}) {
		t.Errorf("excluded %v", got)
	}
	ok, why := s.Healthy()
	if ok || !strings.Contains(why, "recovery state accepting_commits") || !strings.Contains(why, "data state healing") {
		t.Errorf("healthy %v, why %q", ok, why)
	}
	if !s.Available() {
		t.Error("available: want true")
	}
	if got := s.Messages(); !slices.Equal(got, []string{"client: inconsistent_cluster_file"}) {
		t.Errorf("messages %v", got)
	}
	for _, bad := range []string{"", "ERROR: could not connect", "{not json"} {
		if _, err := ParseStatus([]byte(bad)); !errors.Is(err, ErrBadStatus) {
			t.Errorf("ParseStatus(%q): %v, want ErrBadStatus", bad, err)
		}
	}
}

func TestHealthyStatus(t *testing.T) {
	// database_status.healthy false (a process message) does not matter.
	s, err := ParseStatus([]byte(`{"client":{"database_status":{"available":true,"healthy":false}},
		"cluster":{"recovery_state":{"name":"fully_recovered"},"data":{"state":{"healthy":true,"name":"healthy"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := s.Healthy(); !ok {
		t.Fatalf("not healthy: %s", why)
	}
}

// Plan gives each process a class, a port, a directory and a locality of
// its own, and makes one process of each class a coordinator.
func TestPlan(t *testing.T) {
	dir := t.TempDir()
	c, text, err := Plan(Config{Bin: "/x", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Procs); n != 7 {
		t.Fatalf("%d processes, want 7", n)
	}
	if got := []int{len(c.OfClass(ClassStorage)), len(c.OfClass(ClassTransaction)), len(c.OfClass(ClassStateless))}; !slices.Equal(got, []int{3, 2, 2}) {
		t.Errorf("classes %v", got)
	}
	coords, err := ParseClusterFile(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{c.OfClass(ClassStorage)[0].Addr, c.OfClass(ClassTransaction)[0].Addr, c.OfClass(ClassStateless)[0].Addr}
	slices.Sort(want)
	if !slices.Equal(coords, want) {
		t.Errorf("coordinators %v, want %v", coords, want)
	}
	addrs, zones := map[string]bool{}, map[string]bool{}
	for _, p := range c.Procs {
		args := strings.Join(c.Args(p), " ")
		if addrs[p.Addr] {
			t.Errorf("address %s twice", p.Addr)
		}
		addrs[p.Addr] = true
		for _, w := range []string{"-p " + p.Addr, "--class " + p.Class, "-d " + p.Dir + "/data", "--locality-zoneid z-" + p.Name, "-C " + c.ClusterFile} {
			if !strings.Contains(args, w) {
				t.Errorf("%s: args %q lack %q", p.Name, args, w)
			}
		}
		zones["z-"+p.Name] = true
	}
	if len(zones) != 7 {
		t.Errorf("%d zones, want one per process", len(zones))
	}
	if _, _, err := Plan(Config{Dir: dir, Storage: -1}); err == nil {
		t.Error("a class with no process: want an error")
	}
}

func TestParseClusterFile(t *testing.T) {
	got, err := ParseClusterFile("desc:abc@127.0.0.1:2,127.0.0.1:1:tls\n")
	if err != nil || !slices.Equal(got, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "desc:abc", "desc:abc@"} {
		if _, err := ParseClusterFile(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// The commands fail with a clear error before touching anything when the
// installation or the cluster is missing.
func TestMainErrors(t *testing.T) {
	ctx := context.Background()
	var out, errw strings.Builder
	if err := Main(ctx, []string{"start", "-fdb-bin", t.TempDir(), "-dir", t.TempDir()}, &out, &errw); err == nil || !strings.Contains(err.Error(), "no executable fdbserver") {
		t.Errorf("start without fdbserver: %v", err)
	}
	if err := Main(ctx, []string{"status", "-dir", t.TempDir()}, &out, &errw); !errors.Is(err, ErrNoCluster) {
		t.Errorf("status of an empty directory: %v, want ErrNoCluster", err)
	}
	if err := Main(ctx, []string{"stop"}, &out, &errw); err == nil || !strings.Contains(err.Error(), "needs -dir") {
		t.Errorf("stop without -dir: %v", err)
	}
	if err := Main(ctx, []string{"frobnicate"}, &out, &errw); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("unknown command: %v", err)
	}
}

// Any text is status json or ErrBadStatus, never a panic; the cluster
// file parser likewise returns addresses or an error.
func FuzzParseStatus(f *testing.F) {
	f.Add(sampleStatus)
	f.Add("{}")
	f.Add(`{"cluster":{"processes":{"a":{"roles":[{"role":7}]}}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStatus([]byte(s))
		if err != nil {
			if !errors.Is(err, ErrBadStatus) {
				t.Fatalf("error %v is not ErrBadStatus", err)
			}
			return
		}
		st.Healthy()
		st.HoldersOf(RoleLog)
		st.Coordinators()
		if _, err := ParseClusterFile(s); err != nil && !strings.Contains(err.Error(), "not a cluster file") {
			t.Fatalf("cluster file: %v", err)
		}
	})
}
