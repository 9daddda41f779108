package procbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// child is a started worker and what it reported.
type child struct {
	name     string
	c        Child
	ready    chan struct{} // closed at its ready line
	readDone chan struct{} // closed when its output ended (it exited)

	mu        sync.Mutex
	readyOnce sync.Once
	completed int64
	exit      *Line
	readErr   error
}

func (d *drain) start(ctx context.Context, name string) error {
	c, err := d.spawn(ctx, name, d.cfg.workerArgs(name).Flags())
	if err != nil {
		return err
	}
	ch := &child{name: name, c: c, ready: make(chan struct{}), readDone: make(chan struct{})}
	d.children = append(d.children, ch)
	go d.read(ch)
	return nil
}

// read follows a child's report lines until its output ends.
func (d *drain) read(ch *child) {
	defer func() {
		close(ch.readDone)
		notify(d.changed)
	}()
	sc := bufio.NewScanner(ch.c.Output())
	for sc.Scan() {
		l, err := ParseLine(sc.Bytes())
		if err != nil {
			d.log.Warn("procs: a child printed a line that is no report", "child", ch.name, "err", err)
			continue
		}
		ch.mu.Lock()
		switch l.Kind {
		case lineReady:
			ch.readyOnce.Do(func() { close(ch.ready) })
		case lineProgress:
			ch.completed = l.Completed
		case lineExit:
			ch.completed = l.Completed
			ch.exit = &l
		}
		ch.mu.Unlock()
		notify(d.changed)
	}
	ch.mu.Lock()
	ch.readErr = sc.Err()
	ch.mu.Unlock()
}

func (ch *child) exitLine() *Line {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.exit
}

func (ch *child) hasExited() bool {
	select {
	case <-ch.readDone:
		return true
	default:
		return false
	}
}

// exitErr is why a child that exited early did.
func (ch *child) exitErr() error {
	_, err := ch.c.Wait()
	if err == nil {
		err = errNoExit
	}
	return err
}

// progress is the children's completed counts summed.
func (d *drain) progress() int64 {
	var n int64
	for _, ch := range d.children {
		ch.mu.Lock()
		n += ch.completed
		ch.mu.Unlock()
	}
	return n
}

// exited returns a child that has exited, or nil.
func (d *drain) exited() *child {
	for _, ch := range d.children {
		if ch.hasExited() {
			return ch
		}
	}
	return nil
}

// waitReady waits until every child has printed its ready line.
func (d *drain) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.After(timeout)
	for _, ch := range d.children {
		select {
		case <-ch.ready:
		case <-ch.readDone:
			return fmt.Errorf("child %s exited before it was ready: %w", ch.name, ch.exitErr())
		case <-deadline:
			return fmt.Errorf("child %s not ready after %v", ch.name, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stopTimeout bounds a child's graceful stop: the worker's own shutdown
// timeout (10 s) and its last flush, with room to spare.
const stopTimeout = time.Minute

// stopAll stops every child with SIGTERM, waits for each and returns the
// CPU time they used together.
func (d *drain) stopAll() (time.Duration, error) {
	var errs []error
	for _, ch := range d.children {
		if err := ch.c.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	var cpu time.Duration
	for _, ch := range d.children {
		t, err := waitChild(ch, stopTimeout)
		cpu += t
		if err != nil {
			errs = append(errs, fmt.Errorf("child %s: %w", ch.name, err))
		}
	}
	return cpu, errors.Join(errs...)
}

// cpuSoFar is the CPU time the children have used until now, if every
// one's can be read.
func (d *drain) cpuSoFar() (time.Duration, bool) {
	var sum time.Duration
	for _, ch := range d.children {
		t, ok := ch.c.CPUSoFar()
		if !ok {
			return 0, false
		}
		sum += t
	}
	return sum, true
}

// killAll kills the children still running, on an error path.
func (d *drain) killAll() {
	for _, ch := range d.children {
		if !ch.hasExited() {
			ch.c.Kill()
		}
	}
	for _, ch := range d.children {
		_, _ = waitChild(ch, 10*time.Second)
	}
}

// waitChild waits for the child's output to end and for its exit, killing
// it after timeout.
func waitChild(ch *child, timeout time.Duration) (time.Duration, error) {
	select {
	case <-ch.readDone:
	case <-time.After(timeout):
		ch.c.Kill()
		<-ch.readDone
		_, _ = ch.c.Wait()
		return 0, fmt.Errorf("did not exit within %v of SIGTERM; killed", timeout)
	}
	return ch.c.Wait()
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
