package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The smoke scenario runs in process on the embedded engine and fails on
// any violated expectation.
func TestSmoke(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-smoke", "-log-level", "error"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "OK:") {
		t.Fatalf("no OK line:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}

// The producer and worker roles need FoundationDB.
func TestRolesNeedACluster(t *testing.T) {
	for _, role := range []string{"producer", "worker"} {
		err := run(context.Background(), []string{"-role", role}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "-cluster-file") {
			t.Fatalf("-role %s without a cluster: %v", role, err)
		}
	}
}
