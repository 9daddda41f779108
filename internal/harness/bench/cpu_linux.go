//go:build linux

package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
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

// runQueueWait is the time this process's threads have spent runnable but
// waiting for a core (the second field of /proc/self/task/*/schedstat, in
// ns), in seconds: the CPU the machine owed the process and gave others. A
// thread that exits takes its share with it. ok is false when the kernel
// does not keep schedstat.
func runQueueWait() (s float64, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return 0, false
		}
		ns, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return 0, false
		}
		s += float64(ns) / 1e9
		ok = true
	}
	return s, ok
}
