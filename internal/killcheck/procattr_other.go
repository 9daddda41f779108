//go:build !linux

package killcheck

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
