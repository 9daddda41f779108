package procbench

import (
	"fmt"
	"io"

	"github.com/quickfdb/quickfdb/kv"
)

// Row is one process count's drain.
type Row struct {
	Procs    int    `json:"procs"`
	Jobs     int    `json:"jobs"`
	Layout   string `json:"layout"`
	Complete string `json:"complete"`
	// WallS runs from the resume of the task type to the moment the parent
	// saw the last completion.
	WallS      float64 `json:"wall_s"`
	JobsPerSec float64 `json:"jobs_per_s"`
	// CPUS is the children's user + system CPU seconds, from their rusage
	// after Wait (start-up, the paused wait and the stop included);
	// CPUPer1k is that per 1,000 jobs.
	CPUS     float64 `json:"cpu_s"`
	CPUPer1k float64 `json:"cpu_s_per_1k_jobs"`
	// RunCPUPer1k leaves out the CPU the children had used when the task
	// type was resumed (start-up and the paused wait, read from
	// /proc/PID/stat): the drain and the stop, per 1,000 jobs. Negative
	// when the platform cannot tell.
	RunCPUPer1k float64 `json:"run_cpu_s_per_1k_jobs"`
	// Completed is the count the row was checked against: the counter key
	// (Complete "with") or the sum of the children's final counts ("ack").
	Completed int64 `json:"completed"`
	// KV sums the children's kv operations; PerJob divides it by Jobs.
	KV     kv.Stats   `json:"kv"`
	PerJob kv.PerUnit `json:"kv_per_job"`
	// LeaseLost and Conflicts sum the children's worker counts.
	LeaseLost int64 `json:"lease_lost"`
	Conflicts int64 `json:"conflicts"`
}

// rowFormat is one row; WriteHeader's columns match it.
const rowFormat = "%5d %7d %-6s %-8s %8.2f %8.0f %9.3f %9s %7.2f %7.2f %7.2f %7.2f %7.2f %7.3f\n"

// WriteHeader prints the column names of Row.Write.
func WriteHeader(w io.Writer) {
	fmt.Fprintf(w, "%5s %7s %-6s %-8s %8s %8s %9s %9s %7s %7s %7s %7s %7s %7s\n",
		"procs", "jobs", "layout", "complete", "wall s", "jobs/s", "cpu s/1k", "run cpu", "grv/j", "reads/j", "range/j", "muts/j", "cmts/j", "confl/j")
}

// Write prints the row under WriteHeader's columns: CPU seconds per 1,000
// jobs (all of it, and "run cpu" without what was used before the resume),
// kv figures per job, summed over the children.
func (r Row) Write(w io.Writer) {
	p := r.PerJob
	run := "-"
	if r.RunCPUPer1k >= 0 {
		run = fmt.Sprintf("%.3f", r.RunCPUPer1k)
	}
	fmt.Fprintf(w, rowFormat, r.Procs, r.Jobs, r.Layout, r.Complete, r.WallS, r.JobsPerSec, r.CPUPer1k, run,
		p.ReadVersions, p.Reads, p.RangeReads, p.Mutations, p.Commits, p.Conflicts)
}
