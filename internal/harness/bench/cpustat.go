package bench

import (
	"strconv"
	"strings"
)

// parseProcStatCPU reads /proc/stat's aggregate line, "cpu user nice system
// idle iowait irq softirq [steal ...]", in ticks of 1/100 s, and returns
// seconds: busy is user + nice + system + irq + softirq + steal (guest time
// is already counted in user and nice), niced the nice field alone.
func parseProcStatCPU(line string) (busy, niced float64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, false
	}
	tick := func(i int) (float64, bool) {
		if i >= len(f) {
			return 0, true // an old kernel without this field
		}
		v, err := strconv.ParseUint(f[i], 10, 64)
		return float64(v) / 100, err == nil
	}
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		v, ok := tick(i)
		if !ok {
			return 0, 0, false
		}
		busy += v
	}
	niced, _ = tick(2)
	return busy, niced, true
}
