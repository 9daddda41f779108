// Package childproc starts the child processes of this repository's tests
// and tools (fdbtest's throwaway fdbserver, killcheck's and procbench's
// workers) so that they die with the process that started them.
package childproc

import (
	"os/exec"
	"runtime"
)

// Start starts cmd with a parent-death signal (SIGKILL, on Linux; nothing
// elsewhere) from a goroutine locked to its OS thread for the child's
// lifetime: on Linux that signal is tied to the thread that started the
// child, not to the process, and Go may retire an idle unlocked thread,
// which would kill the child mid-run. Once the child has started, run runs
// on that goroutine; it owns the child from then on (reading its output,
// cmd.Wait, closing what it used), and the thread is kept until it
// returns. Start returns once the child started, or why it did not (then
// run never runs).
func Start(cmd *exec.Cmd, run func()) error {
	cmd.SysProcAttr = sysProcAttr()
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		run()
	}()
	return <-started
}
