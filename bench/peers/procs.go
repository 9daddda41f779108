package main

// Worker processes (-procs N > 1): the worker of a row runs in N child
// processes, this same binary re-executed in child mode (child.go), each
// with slots/N handler slots; resets, enqueues and the server pids stay in
// this process. A child's life is one workload: Reset starts the children
// and waits until each has connected; Start tells them to start their
// workers; Stop closes their stdin, on which each stops its worker
// gracefully (completions flushed) and exits. Each handler start comes back
// over the child's report pipe (fd 3) and is passed to the workload's
// startFunc here, so starts are counted in this process as before.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// childReadyTimeout bounds a child's start-up: exec, connecting, and
	// for FoundationDB the client library's network thread.
	childReadyTimeout = time.Minute
	// childStopTimeout bounds a child's graceful stop before it is killed:
	// Asynq's shutdown takes up to 8 s, quickfdb's Stop is bounded at 30 s.
	childStopTimeout = 45 * time.Second
)

// The report pipe carries fixed records: a tag and two int64s, little
// endian. Children send recReady (a: pid) once connected, recStarted once
// their worker has started, and recJob (a: stamp, b: start time) per
// handler start. This process sends cmdStart (a: handler slots) on stdin.
const (
	recordSize = 17
	recReady   = 'R'
	recStarted = 'S'
	recJob     = 'J'
	cmdStart   = 's'
)

func appendRecord(b []byte, tag byte, x, y int64) []byte {
	b = append(b, tag)
	b = binary.LittleEndian.AppendUint64(b, uint64(x))
	return binary.LittleEndian.AppendUint64(b, uint64(y))
}

func parseRecord(b []byte) (tag byte, x, y int64) {
	return b[0], int64(binary.LittleEndian.Uint64(b[1:9])), int64(binary.LittleEndian.Uint64(b[9:17]))
}

type record struct {
	tag  byte
	x, y int64
}

// procSystem runs the embedded system's worker in n child processes. The
// embedded system does everything else: its Reset prepares the queue the
// children open, and its Name and ServerPIDs are the row's.
type procSystem struct {
	system
	key    string          // the row's name in -systems, the child's -child-worker
	n      int             // worker processes
	args   func() []string // the child's connection flags, read after each Reset
	stderr io.Writer       // the children's stderr (their stdout goes there too)
	kids   []*child
}

func (p *procSystem) Reset(ctx context.Context) error {
	// Leftovers of a workload that failed between Reset and Stop.
	stopErr := p.stopChildren()
	if err := p.system.Reset(ctx); err != nil {
		return errors.Join(err, stopErr)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := append([]string{childFlag, p.key}, p.args()...)
	for range p.n {
		c, err := spawn(exe, args, p.stderr)
		if err != nil {
			return errors.Join(err, p.stopChildren())
		}
		p.kids = append(p.kids, c)
	}
	for _, c := range p.kids {
		if _, err := c.expect(ctx, recReady, childReadyTimeout); err != nil {
			return errors.Join(err, p.stopChildren())
		}
	}
	if stopErr != nil {
		fmt.Fprintf(p.stderr, "peers: %s: stopping the last workload's worker processes: %v\n", p.key, stopErr)
	}
	return nil
}

// perChild is each child's share of slots, at least one.
func perChild(slots, n int) int { return max(1, slots/n) }

func (p *procSystem) Start(ctx context.Context, slots int, onStart startFunc) error {
	if len(p.kids) == 0 {
		return errors.New("worker processes: Start without Reset")
	}
	cmd := appendRecord(nil, cmdStart, int64(perChild(slots, p.n)), 0)
	for _, c := range p.kids {
		c.onStart.Store(&onStart)
		if _, err := c.stdin.Write(cmd); err != nil {
			return fmt.Errorf("worker process %d: %w", c.cmd.Process.Pid, err)
		}
	}
	for _, c := range p.kids {
		if _, err := c.expect(ctx, recStarted, childReadyTimeout); err != nil {
			return err
		}
	}
	return nil
}

func (p *procSystem) Stop(context.Context) error { return p.stopChildren() }

func (p *procSystem) Close() error { return errors.Join(p.stopChildren(), p.system.Close()) }

// stopChildren closes every child's stdin, on which it stops its worker and
// exits, and waits for them, and for their last reports, up to
// childStopTimeout in all; stragglers are killed. It does not take the
// workload's context: an expired workload must still stop its children.
func (p *procSystem) stopChildren() error {
	for _, c := range p.kids {
		c.stdin.Close()
	}
	deadline := time.NewTimer(childStopTimeout)
	defer deadline.Stop()
	var errs []error
	for _, c := range p.kids {
		select {
		case <-c.exited:
		case <-deadline.C:
			c.cmd.Process.Kill()
			errs = append(errs, fmt.Errorf("worker process %d did not stop within %s: killed", c.cmd.Process.Pid, childStopTimeout))
			deadline.Reset(time.Second) // the rest get a moment each
			<-c.exited
		}
		// The child held the only write end of its report pipe: its last
		// records are in the pipe, read before Stop returns.
		<-c.readDone
		if c.waitErr != nil {
			errs = append(errs, fmt.Errorf("worker process %d: %w", c.cmd.Process.Pid, c.waitErr))
		}
	}
	p.kids = nil
	return errors.Join(errs...)
}

// child is one worker process.
type child struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	report   *os.File // the read end of the child's fd 3
	onStart  atomic.Pointer[startFunc]
	ctl      chan record   // records other than recJob; closed at the report's EOF
	readDone chan struct{} // closed once every report has been read
	exited   chan struct{} // closed once the child has been reaped
	waitErr  error         // cmd.Wait's, set before exited is closed
}

// spawn starts exe with args as a worker process and registers it for the
// CPU accounting.
func spawn(exe string, args []string, stderr io.Writer) (*child, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout = stderr // nothing should print there; the reports have their own pipe
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{w} // fd 3 in the child
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	c := &child{cmd: cmd, stdin: stdin, report: r, ctl: make(chan record, 8),
		readDone: make(chan struct{}), exited: make(chan struct{})}
	workerProcs.mu.Lock() // so that no CPU sample sees the child half registered
	err = cmd.Start()
	if err == nil {
		workerProcs.all = append(workerProcs.all, c)
	}
	workerProcs.mu.Unlock()
	w.Close() // the child holds the write end now: EOF when it exits
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("start a worker process: %w", err)
	}
	go c.read()
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// read passes the child's job records to the current startFunc and the
// others to ctl, until the child closes its end.
func (c *child) read() {
	defer close(c.readDone)
	defer close(c.ctl)
	defer c.report.Close()
	br := bufio.NewReaderSize(c.report, 64<<10)
	var b [recordSize]byte
	for {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return
		}
		tag, x, y := parseRecord(b[:])
		if tag == recJob {
			if f := c.onStart.Load(); f != nil {
				(*f)(x, y)
			}
			continue
		}
		select {
		case c.ctl <- record{tag, x, y}:
		default: // nobody waits for it: a protocol slip, not worth blocking the starts
		}
	}
}

// expect waits for a control record with the given tag.
func (c *child) expect(ctx context.Context, tag byte, timeout time.Duration) (record, error) {
	pid := c.cmd.Process.Pid
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r, ok := <-c.ctl:
		if !ok {
			<-c.exited
			return record{}, fmt.Errorf("worker process %d exited before reporting %q: %v (its stderr is above)", pid, tag, c.waitErr)
		}
		if r.tag != tag {
			return r, fmt.Errorf("worker process %d: got record %q, want %q", pid, r.tag, tag)
		}
		return r, nil
	case <-ctx.Done():
		return record{}, ctx.Err()
	case <-t.C:
		return record{}, fmt.Errorf("worker process %d did not report %q within %s", pid, tag, timeout)
	}
}

// workerProcs is every worker process this process has started, live or
// reaped, for childrenCPU.
var workerProcs struct {
	mu  sync.Mutex
	all []*child
}

// childrenCPU returns the CPU seconds of every worker process started so
// far: a live (or exited but unreaped) child's utime+stime from
// /proc/<pid>/stat, a reaped one's from the rusage wait4 returned for it.
// getrusage(RUSAGE_SELF) never includes children, and once reaped a child
// is gone from /proc, so both are needed. Counting each child by itself
// (rather than RUSAGE_CHILDREN plus the live ones) cannot count a child
// twice or not at all when it is reaped between the two reads. Both are in
// 10 ms ticks, truncated the same way (/proc's utime and stime each, and the
// rusage's likewise), so a child alive at one sample and reaped at the next
// is not biased by the change of source; the error is ±20 ms per child per
// difference, as for the servers.
func childrenCPU() (float64, error) {
	workerProcs.mu.Lock()
	all := append([]*child(nil), workerProcs.all...)
	workerProcs.mu.Unlock()
	self := os.Getpid()
	var ticks uint64
	for _, c := range all {
		select {
		case <-c.exited:
			ticks += rusageTicks(c.cmd.ProcessState)
			continue
		default:
		}
		st, err := readProcStat(c.cmd.Process.Pid)
		if err == nil && st.ppid == self {
			ticks += st.ticks
			continue
		}
		// Reaped since the check above: its rusage is about to be recorded.
		select {
		case <-c.exited:
			ticks += rusageTicks(c.cmd.ProcessState)
		case <-time.After(10 * time.Second):
			return 0, fmt.Errorf("worker process %d: neither in /proc nor reaped", c.cmd.Process.Pid)
		}
	}
	return float64(ticks) / clockTicks, nil
}

// rusageTicks is a reaped child's user and system time in clock ticks,
// each truncated as /proc truncates it.
func rusageTicks(ps *os.ProcessState) uint64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	tk := func(t syscall.Timeval) uint64 { return uint64(t.Sec)*clockTicks + uint64(t.Usec)/(1e6/clockTicks) }
	return tk(ru.Utime) + tk(ru.Stime)
}

// readProcStat reads /proc/<pid>/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}
