//go:build linux

package procbench

import "syscall"

// sysProcAttr makes a child die with the benchmark.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
