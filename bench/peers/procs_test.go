package main

import (
	"bufio"
	"context"
	"io"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// With PEERS_TEST_CHILD set the test binary is a fake worker process: it
// speaks the report protocol of child.go without a queue. On cmdStart it
// burns testBurn of CPU, then reports testJobs starts whose stamp is its
// slot count, and exits when stdin closes.
const (
	testJobs = 3000
	testBurn = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	if os.Getenv("PEERS_TEST_CHILD") != "" {
		os.Exit(fakeChild())
	}
	os.Exit(m.Run())
}

func fakeChild() int {
	rep := newReporter(os.NewFile(3, "report"))
	rep.add(recReady, int64(os.Getpid()), 0, true)
	cmds := make(chan record)
	go readCommands(os.Stdin, cmds)
	for c := range cmds {
		if c.tag != cmdStart {
			return 1
		}
		burn(testBurn)
		rep.add(recStarted, 0, 0, true)
		for range testJobs {
			rep.job(c.x, time.Now().UnixNano())
		}
	}
	if err := rep.close(); err != nil {
		return 1
	}
	return 0
}

// burn spins for d of this thread's CPU time.
func burn(d time.Duration) {
	c0, _ := selfCPU()
	x := 1.0
	for c, _ := selfCPU(); c-c0 < d.Seconds(); c, _ = selfCPU() {
		for range 100_000 {
			x = math.Sqrt(x + 1)
		}
	}
	_ = x
}

// fakeSystem is a row whose worker only runs in fake worker processes.
type fakeSystem struct{ resets int }

func (f *fakeSystem) Name() string                                { return "fake" }
func (f *fakeSystem) Reset(context.Context) error                 { f.resets++; return nil }
func (f *fakeSystem) EnqueueBatch(context.Context, []int64) error { return nil }
func (f *fakeSystem) Enqueue(context.Context, int64) error        { return nil }
func (f *fakeSystem) Start(context.Context, int, startFunc) error { panic("in process") }
func (f *fakeSystem) Stop(context.Context) error                  { return nil }
func (f *fakeSystem) ServerPIDs() []int                           { return nil }
func (f *fakeSystem) Close() error                                { return nil }

// TestWorkerProcesses runs a fake row in two worker processes: every start
// they report reaches the startFunc with each one's share of the slots, Stop
// reaps them, and the client CPU counts their burn whether they are alive
// (from /proc) or reaped (from their rusage), without a jump between the two.
func TestWorkerProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	t.Setenv("PEERS_TEST_CHILD", "1")
	ctx := context.Background()
	p := &procSystem{system: &fakeSystem{}, key: "fake", n: 2, args: func() []string { return nil }, stderr: os.Stderr}
	defer p.Close()
	c0, err := sampleCPU(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	var n, bad atomic.Int64
	done := make(chan struct{})
	if err := p.Start(ctx, 11, func(stamp, at int64) {
		if stamp != 5 || at <= 0 {
			bad.Add(1)
		}
		if n.Add(1) == 2*testJobs {
			close(done)
		}
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d of %d starts reported", n.Load(), 2*testJobs)
	}
	live, err := sampleCPU(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	reaped, err := sampleCPU(nil)
	if err != nil {
		t.Fatal(err)
	}
	if bad.Load() != 0 || n.Load() != 2*testJobs {
		t.Fatalf("%d starts, %d with a wrong stamp (want slots 11/2 = 5)", n.Load(), bad.Load())
	}
	burnt := 2 * testBurn.Seconds()
	if d := live.Client - c0.Client; d < burnt-0.03 {
		t.Errorf("client CPU with the children alive grew by %.3f s, want at least their %.3f s", d, burnt)
	}
	if d := reaped.Client - live.Client; d < -0.03 || d > 0.2 {
		t.Errorf("client CPU moved by %.3f s when the children were reaped", d)
	}
	if len(p.kids) != 0 {
		t.Fatal("children left after Stop")
	}
}

// TestWorkerProcessDies: a child that exits before reporting ready fails
// Reset with its exit status instead of hanging.
func TestWorkerProcessDies(t *testing.T) {
	t.Setenv("PEERS_TEST_CHILD", "1")
	p := &procSystem{system: &fakeSystem{}, key: "fake", n: 1, args: func() []string { return nil }, stderr: io.Discard}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := spawn(exe, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p.kids = []*child{c}
	c.stdin.Close() // the fake child exits at once, after its ready record
	if _, err := c.expect(context.Background(), recReady, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.expect(context.Background(), recStarted, 10*time.Second); err == nil {
		t.Fatal("no error from a child that exited")
	}
	if err := p.stopChildren(); err != nil {
		t.Fatal(err)
	}
}

func TestRecorderKeepsLatestStart(t *testing.T) {
	r := newRecorder(3, true)
	r.onStart(10, 30)
	r.onStart(10, 20) // from another process, reported later
	r.onStart(5, 25)
	if r.lastStart.Load() != 30 || r.started.Load() != 3 {
		t.Fatalf("last start %d, started %d", r.lastStart.Load(), r.started.Load())
	}
	select {
	case <-r.done:
	default:
		t.Fatal("not done after 3 of 3")
	}
}

// BenchmarkReportPipe is the reporting cost per handler start, both ends:
// the child's buffered append and batched write, this process's read and
// decode (the startFunc itself is a counter here).
func BenchmarkReportPipe(b *testing.B) {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		br := bufio.NewReaderSize(r, 64<<10)
		var rec [recordSize]byte
		for {
			if _, err := io.ReadFull(br, rec[:]); err != nil {
				return
			}
			if tag, _, _ := parseRecord(rec[:]); tag == recJob {
				n.Add(1)
			}
		}
	}()
	rep := newReporter(w)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rep.job(1, 2)
		}
	})
	if err := rep.close(); err != nil {
		b.Fatal(err)
	}
	<-readDone
	if n.Load() != int64(b.N) {
		b.Fatalf("%d of %d records read", n.Load(), b.N)
	}
}
