package procbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/quickfdb/quickfdb/internal/childproc"
)

// Child is one started worker.
type Child interface {
	// Output is the child's report lines; it ends when the child exits.
	Output() io.Reader
	// Stop asks the child to stop gracefully (SIGTERM).
	Stop() error
	// Kill ends it at once (SIGKILL), on the error paths.
	Kill()
	// Wait waits for the child to exit, after Output has been read to its
	// end, and returns the CPU time it used (user + system).
	Wait() (cpu time.Duration, err error)
	// CPUSoFar is the CPU time it has used until now, if the platform
	// tells (Linux).
	CPUSoFar() (time.Duration, bool)
}

// Spawner starts child name with the worker's command line.
type Spawner func(ctx context.Context, name string, args []string) (Child, error)

// Exec starts children as processes: path with prefix and then the
// worker's flags (the command's own executable and its hidden
// "procs-worker"), env added to the parent's environment. Each child's
// standard error goes to logDir/NAME.log.
func Exec(path string, prefix, env []string, logDir string) Spawner {
	return func(ctx context.Context, name string, args []string) (Child, error) {
		return startProc(path, append(append([]string(nil), prefix...), args...), env, filepath.Join(logDir, name+".log"))
	}
}

// proc is a child process.
type proc struct {
	cmd    *exec.Cmd
	out    *io.PipeReader
	exited chan struct{}
	err    error // Wait's, valid after exited
}

// startProc starts the process so that it dies with the benchmark
// (childproc.Start). The goroutine that owns it copies the child's output
// to a pipe and waits for it, so that Wait never races the reader
// (exec.Cmd.Wait closes the output).
func startProc(path string, args, env []string, logFile string) (*proc, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("procbench: %w", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("procbench: %w", err)
	}
	pr, pw := io.Pipe()
	p := &proc{cmd: cmd, out: pr, exited: make(chan struct{})}
	err = childproc.Start(cmd, func() {
		defer close(p.exited)
		defer log.Close()
		_, cerr := io.Copy(pw, stdout)
		p.err = cmd.Wait()
		pw.CloseWithError(cerr)
	})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("procbench: start %s: %w", path, err)
	}
	return p, nil
}

func (p *proc) Output() io.Reader { return p.out }

func (p *proc) Stop() error { return p.signal(syscall.SIGTERM) }

func (p *proc) Kill() { _ = p.signal(syscall.SIGKILL) }

func (p *proc) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("procbench: pid %d: %v: %w", p.cmd.Process.Pid, sig, err)
	}
	return nil
}

func (p *proc) CPUSoFar() (time.Duration, bool) { return pidCPU(p.cmd.Process.Pid) }

func (p *proc) Wait() (time.Duration, error) {
	<-p.exited
	var cpu time.Duration
	if st := p.cmd.ProcessState; st != nil {
		// The child's own rusage (wait4): its threads, the FDB client's
		// network thread included.
		cpu = st.UserTime() + st.SystemTime()
	}
	if p.err != nil {
		return cpu, fmt.Errorf("procbench: pid %d: %w", p.cmd.Process.Pid, p.err)
	}
	return cpu, nil
}
