package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports (the kernel's ABI fixes it
// regardless of the internal HZ), so no cgo call to sysconf is needed.
const clockTicks = 100

// cpuTimes is CPU time in seconds, split between the client (this process:
// benchmark driver, queue client library, workers, and for memkv the whole
// engine; plus with -procs > 1 the worker processes, see childrenCPU) and
// the server processes measured from /proc.
type cpuTimes struct {
	Client float64 `json:"client"`
	Server float64 `json:"server"`
}

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return cpuTimes{Client: c.Client - o.Client, Server: c.Server - o.Server}
}

func (c cpuTimes) total() float64 { return c.Client + c.Server }

// selfCPU returns the user+system CPU seconds of this process (all threads).
func selfCPU() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime), nil
}

// procStat is what we need from one /proc/<pid>/stat line.
type procStat struct {
	pid, ppid int
	// ticks is utime+stime+cutime+cstime: the process's own CPU plus that
	// of its children it has reaped.
	ticks uint64
}

// parseProcStat parses a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may itself contain spaces and parentheses, so the
// fields are counted from the last ')'.
func parseProcStat(line string) (procStat, error) {
	open := strings.IndexByte(line, '(')
	closing := strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("proc stat %q: no command field", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat pid: %w", err)
	}
	// After ')': state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
	f := strings.Fields(line[closing+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("proc stat of %d: %d fields after the command", pid, len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat of %d: ppid: %w", pid, err)
	}
	var ticks uint64
	for _, s := range f[11:15] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("proc stat of %d: times: %w", pid, err)
		}
		if v > 0 {
			ticks += uint64(v)
		}
	}
	return procStat{pid: pid, ppid: ppid, ticks: ticks}, nil
}

// treeCPU returns the CPU seconds of the process trees rooted at roots:
// each process's utime+stime+cutime+cstime, summed over every live process
// in the trees. A backend that exits between two samples moves its time into
// its parent's cutime when reaped, so the sum stays continuous as Postgres
// backends and Redis's rewrite children come and go.
func treeCPU(roots []int) (float64, error) {
	if len(roots) == 0 {
		return 0, nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("read /proc: %w", err)
	}
	stats := map[int]procStat{}
	children := map[int][]int{}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited while we listed
		}
		st, err := parseProcStat(string(b))
		if err != nil {
			continue
		}
		stats[st.pid] = st
		children[st.ppid] = append(children[st.ppid], st.pid)
	}
	var ticks uint64
	seen := map[int]bool{}
	stack := append([]int(nil), roots...)
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		st, ok := stats[pid]
		if !ok {
			continue
		}
		ticks += st.ticks
		stack = append(stack, children[pid]...)
	}
	for _, r := range roots {
		if _, ok := stats[r]; !ok {
			return 0, fmt.Errorf("server process %d not found in /proc", r)
		}
	}
	return float64(ticks) / clockTicks, nil
}

// parentPID returns the parent of pid, from /proc.
func parentPID(pid int) (int, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("server process %d is not on this machine: %w", pid, err)
	}
	st, err := parseProcStat(string(b))
	if err != nil {
		return 0, err
	}
	return st.ppid, nil
}

// sampleCPU reads the client's CPU (this process's and its worker
// processes') and that of the server trees. Worker processes are not in any
// server tree, so nothing is counted twice.
func sampleCPU(serverRoots []int) (cpuTimes, error) {
	c, err := selfCPU()
	if err != nil {
		return cpuTimes{}, err
	}
	k, err := childrenCPU()
	if err != nil {
		return cpuTimes{}, err
	}
	c += k
	s, err := treeCPU(serverRoots)
	if err != nil {
		return cpuTimes{}, err
	}
	return cpuTimes{Client: c, Server: s}, nil
}
