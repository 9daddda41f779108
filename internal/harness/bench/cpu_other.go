//go:build !unix

package bench

// processCPU cannot read this process's CPU time here.
func processCPU() (float64, bool) { return 0, false }
