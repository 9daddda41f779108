//go:build unix

package bench

import "syscall"

// processCPU is this process's user + system CPU seconds, all threads
// (getrusage RUSAGE_SELF): harness, queue and memkv together. ok is false
// when the platform cannot tell.
func processCPU() (s float64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime), true
}
