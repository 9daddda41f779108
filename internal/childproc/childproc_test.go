package childproc

import (
	"os/exec"
	"runtime"
	"testing"
)

// The child runs, run gets it once it started, and a command that cannot
// start is an error with run never called.
func TestStart(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no true(1)")
	}
	path, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) on PATH")
	}
	cmd := exec.Command(path)
	done := make(chan error, 1)
	if err := Start(cmd, func() { done <- cmd.Wait() }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the child: %v", err)
	}
	if runtime.GOOS == "linux" && (cmd.SysProcAttr == nil || cmd.SysProcAttr.Pdeathsig == 0) {
		t.Fatal("no parent-death signal on Linux")
	}
	ran := false
	if err := Start(exec.Command("/nonexistent/quickfdb-child"), func() { ran = true }); err == nil || ran {
		t.Fatalf("a command that cannot start: err %v, run called %v", err, ran)
	}
}
