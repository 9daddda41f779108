//go:build linux

package procbench

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis: fields count from the
	// last ')'. utime 250 and stime 50 ticks: 3 s.
	line := "4242 (quick bench) x) S 1 4242 4242 0 -1 4194304 128 0 0 0 250 50 0 0 20 0 1 0 1095473"
	if d, ok := parseStatCPU(line); !ok || d != 3*time.Second {
		t.Errorf("got %v, %v; want 3s", d, ok)
	}
	if _, ok := parseStatCPU("4242 (short) S 1 2"); ok {
		t.Error("a short line parsed")
	}
	if _, ok := pidCPU(os.Getpid()); !ok {
		t.Error("cannot read this process's CPU time")
	}
}
