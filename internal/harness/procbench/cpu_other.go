//go:build !linux

package procbench

import "time"

// pidCPU cannot read another process's CPU time here.
func pidCPU(int) (time.Duration, bool) { return 0, false }
