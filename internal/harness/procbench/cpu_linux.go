//go:build linux

package procbench

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// userHz is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on every
// Linux (the kernel scales to it whatever its own tick).
const userHz = 100

// pidCPU is the CPU time (user + system) process pid has used so far, from
// /proc/PID/stat, to the 10 ms of its unit. ok is false if it cannot be
// read (the process is gone).
func pidCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime, fields 14 and 15 of a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces, so fields are counted from the last ')'.
func parseStatCPU(line string) (time.Duration, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * time.Second / userHz, true
}
