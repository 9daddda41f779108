package worker

import (
	"os/exec"
	"strings"
	"testing"
)

// The runtime links no database engine: a production worker built from
// these packages cannot run on the in-memory engine by mistake, and does
// not carry the FDB binding unless the program imports it itself. The
// engines are for programs (workermain, examples, tests) to choose.
func TestRuntimeImportsNoEngine(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the imports with")
	}
	runtime := []string{"worker", "quick", "cron", "lanes", "internal/txn", "clock", "kv", "metrics"}
	engines := []string{"kv/memkv", "kv/fdbkv"}
	const mod = "github.com/quickfdb/quickfdb/"
	for _, tags := range []string{"", "fdb"} {
		args := []string{"list", "-deps"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		for _, p := range runtime {
			args = append(args, mod+p)
		}
		out, err := exec.Command(gobin, args...).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list (tags %q): %v\n%s", tags, err, ee.Stderr)
			}
			t.Fatalf("go list (tags %q): %v", tags, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, e := range engines {
				if dep == mod+e {
					t.Errorf("with tags %q the runtime (%v) depends on %s", tags, runtime, dep)
				}
			}
		}
	}
}
