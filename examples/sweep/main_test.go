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
