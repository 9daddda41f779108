//go:build !linux

package bench

// machineCPU cannot read the machine's CPU time here.
func machineCPU() (busy, niced float64, ok bool) { return 0, 0, false }

// runQueueWait cannot read this process's run-queue wait here.
func runQueueWait() (float64, bool) { return 0, false }
