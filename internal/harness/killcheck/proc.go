package killcheck

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/internal/childproc"
)

// proc is a child process of the scenario (a worker, the producer, an
// fdbserver): its event lines go to events, everything else to its log.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's result, valid after exited

	mu       sync.Mutex
	progress *Progress
}

// startProc starts path with args. Its standard error and the lines of
// its standard output that are no events go to logFile. It dies with the
// scenario (childproc.Start).
func startProc(name, logFile, path string, args ...string) (*proc, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, exited: make(chan struct{}), progress: NewProgress()}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stderr = log
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	err = childproc.Start(p.cmd, func() {
		p.read(out, log)
		p.err = p.cmd.Wait()
		log.Close()
		close(p.exited)
	})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	return p, nil
}

// read notes the process's events until its output closes, and copies
// every line to its log.
func (p *proc) read(out io.Reader, log io.Writer) {
	s := bufio.NewScanner(out)
	for s.Scan() {
		line := s.Text()
		fmt.Fprintln(log, line)
		e, err := ParseEvent(line)
		if err != nil {
			continue
		}
		p.mu.Lock()
		p.progress.Add(e)
		p.mu.Unlock()
	}
}

// Progress returns a copy of what the process reported so far.
func (p *proc) Progress() *Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.progress.Clone()
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// signal sends sig and, for SIGKILL, waits until the process has exited
// and its output is read (so its reports are complete).
func (p *proc) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s %v: %w", p.name, sig, err)
	}
	return nil
}

// wait waits up to d for the process to exit and returns its error.
func (p *proc) wait(d time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("%s (pid %d) did not exit within %v", p.name, p.pid(), d)
	}
}

// kill kills the process (SIGKILL) and waits for it.
func (p *proc) kill() {
	_ = p.signal(syscall.SIGKILL)
	_ = p.wait(30 * time.Second)
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}
