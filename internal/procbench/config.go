package procbench

import (
	"errors"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/internal/bench"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
	"github.com/quickfdb/quickfdb/workermain"
)

// The completion modes (see the package comment).
const (
	CompleteWith = "with" // Job.CompleteWith with the counter key: exact, a commit per job
	CompleteAck  = "ack"  // handlers return nil: acks batched by the worker
)

// Config is one run: the same backlog drained by each process count in turn.
type Config struct {
	// ClusterFile is passed to the children ("" is the default cluster file).
	ClusterFile string
	// Subspace is the run's subspace in workermain's -subspace syntax. Run
	// clears it before each process count and after the last.
	Subspace string
	Procs    []int
	Jobs     int
	// Layout is "zones", the one layout (kept in the rows, so that they
	// compare with those of builds that had two).
	Layout string
	// ZoneLanes is a new zone's lane count (0: quick's default, one lane
	// that grows under backlog).
	ZoneLanes   int
	Concurrency int // handler slots per worker process
	Duration    bench.Dist
	NoOp        bool
	Payload     int // bytes per job
	Complete    string
	// FillBatch bounds the jobs of one fill transaction.
	FillBatch int
	Seed      uint64
	// Settle is how long the children stay paused after the last is up:
	// the worker's clock check needs one round.
	Settle time.Duration
	// Poll is how often the parent reads the counter key.
	Poll time.Duration
	// ReportEvery is how often a child prints its completed count.
	ReportEvery time.Duration
	// Timeout bounds one drain.
	Timeout time.Duration
	// Keep leaves the last run's data in the database.
	Keep bool
}

// Defaults is the bench's job model on a 20,000-job backlog.
func Defaults() Config {
	return Config{
		Subspace:    "quickbench,procs",
		Procs:       []int{1, 4, 16},
		Jobs:        20000,
		Layout:      "zones",
		Concurrency: 8,
		Duration:    bench.Dist{Kind: "exponential", Mean: 20 * time.Millisecond},
		Payload:     100,
		Complete:    CompleteWith,
		FillBatch:   200,
		Seed:        1,
		Settle:      3 * time.Second,
		Poll:        10 * time.Millisecond,
		ReportEvery: 10 * time.Millisecond,
		Timeout:     10 * time.Minute,
	}
}

// Validate rejects configurations that cannot run.
func (c Config) Validate() error {
	var errs []error
	if len(c.Procs) == 0 {
		errs = append(errs, errors.New("no process counts"))
	}
	for _, n := range c.Procs {
		if n < 1 || n > 256 {
			errs = append(errs, fmt.Errorf("process count %d: want 1..256", n))
		}
	}
	if _, err := parseLayout(c.Layout); err != nil {
		errs = append(errs, err)
	}
	if c.Complete != CompleteWith && c.Complete != CompleteAck {
		errs = append(errs, fmt.Errorf("complete %q: want %s or %s", c.Complete, CompleteWith, CompleteAck))
	}
	if _, err := workermain.ParseSubspace(c.Subspace); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.Jobs < 1:
		errs = append(errs, errors.New("jobs must be at least 1"))
	case c.Concurrency < 1, c.FillBatch < 1:
		errs = append(errs, errors.New("concurrency and fill batch must be at least 1"))
	case c.ZoneLanes < 0:
		errs = append(errs, errors.New("negative zone lanes"))
	case c.Payload < durationBytes || c.Payload > 90_000:
		errs = append(errs, fmt.Errorf("payload must be %d..90000 bytes (the job's duration is in its first %d)", durationBytes, durationBytes))
	case c.Settle < 0 || c.Poll <= 0 || c.ReportEvery <= 0 || c.Timeout <= 0:
		errs = append(errs, errors.New("settle must be >= 0; poll, report interval and timeout positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("procbench: %w", err)
	}
	return nil
}

func parseLayout(s string) (string, error) {
	if s != "zones" {
		return "", fmt.Errorf("layout %q: want zones (the lanes layout was removed)", s)
	}
	return s, nil
}

// spaces are a run's subspaces: the queue's, and the counter key beside it
// that CompleteWith handlers add to.
func spaces(root tuple.Subspace) (queue tuple.Subspace, counter []byte) {
	return root.Sub("queue"), root.Pack(tuple.Tuple{"completed"})
}

// queueOptions are the options the parent and every child open the queue
// with: they must agree, since the layout decides where jobs go and how
// they are found.
func queueOptions(layout string, zoneLanes int) (quick.Options, error) {
	if _, err := parseLayout(layout); err != nil {
		return quick.Options{}, err
	}
	o := quick.Options{}
	if zoneLanes > 0 {
		o.ZoneLanes = zoneLanes
		o.MaxZoneLanes = max(zoneLanes, o.MaxZoneLanes)
	}
	return o, nil
}
