//go:build fdb && !linux

package fdbtest

import "syscall"

// sysProcAttr: no parent-death signal outside Linux; use fdbtest.Main to stop
// the throwaway fdbserver.
func sysProcAttr() *syscall.SysProcAttr { return nil }
