//go:build linux

package bench

import (
	"bufio"
	"os"
)

// machineCPU is the CPU time every process of the machine has used since
// boot, from /proc/stat, in seconds summed over the cores
// (parseProcStatCPU). ok is false when /proc/stat cannot be read.
func machineCPU() (busy, niced float64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, 0, false
	}
	return parseProcStatCPU(sc.Text())
}
