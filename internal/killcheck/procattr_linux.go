//go:build linux

package killcheck

import "syscall"

// sysProcAttr makes a child die with the scenario.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
