//go:build fdb && linux

package fdbtest

import "syscall"

// sysProcAttr makes the throwaway fdbserver die with the test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
