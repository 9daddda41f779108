//go:build !linux

package childproc

import "syscall"

// sysProcAttr: no parent-death signal outside Linux (fdbtest.Main stops a
// throwaway fdbserver; the tools kill their children on their way out).
func sysProcAttr() *syscall.SysProcAttr { return nil }
