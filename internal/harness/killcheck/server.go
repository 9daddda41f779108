package killcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is the fdbserver the server-restart scenario starts, kills and
// starts again: one process, its cluster file, data and log directories
// under dir.
type server struct {
	bin, dir    string
	clusterFile string
	args        []string
	p           *proc
	s           *scenario
}

// newServer prepares a server in dir (created if missing; must hold no
// data directory yet, since the scenario configures a new database).
func (s *scenario) newServer(bin, dir string) (*server, error) {
	for _, name := range []string{"fdbserver", "fdbcli"} {
		if fi, err := os.Stat(filepath.Join(bin, name)); err != nil || fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("no executable %s in -fdb-bin %q", name, bin)
		}
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "killcheck-fdb-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(data); err == nil {
		return nil, fmt.Errorf("%s exists: the scenario configures a new database, give it an empty -data-dir", data)
	}
	logs := filepath.Join(dir, "logs")
	for _, d := range []string{data, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cf := filepath.Join(dir, "fdb.cluster")
	if err := os.WriteFile(cf, []byte("killcheck:kc"+strconv.Itoa(port)+"@"+addr+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &server{
		bin: bin, dir: dir, clusterFile: cf, s: s,
		args: []string{"-p", addr, "-C", cf, "-d", data, "-L", logs, "--listen-address", addr},
	}, nil
}

// start starts fdbserver on the server's data directory.
func (v *server) start() error {
	p, err := startProc("fdbserver", filepath.Join(v.dir, "fdbserver.out"), filepath.Join(v.bin, "fdbserver"), v.args...)
	if err != nil {
		return err
	}
	v.p = p
	return nil
}

// configure creates the database: one process, the ssd engine.
func (v *server) configure(ctx context.Context) error {
	var last string
	for {
		cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		cmd := exec.CommandContext(cctx, filepath.Join(v.bin, "fdbcli"), "-C", v.clusterFile, "--timeout", "30", "--exec", "configure new single ssd")
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		cancel()
		text := buf.String()
		if strings.Contains(text, "Database created") {
			return nil
		}
		last = strings.TrimSpace(text)
		if err != nil {
			last = fmt.Sprintf("%v: %s", err, last)
		}
		if !v.p.alive() {
			return fmt.Errorf("fdbserver exited (%v); fdbcli said: %s (logs in %s)", v.p.err, last, v.dir)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("configure new single ssd: %w; fdbcli said: %s", ctx.Err(), last)
		case <-time.After(time.Second):
		}
	}
}

// stop ends the server (SIGTERM, then SIGKILL) and removes its directory
// unless keep.
func (v *server) stop(keep bool) {
	if v.p != nil && v.p.alive() {
		_ = v.p.signal(syscall.SIGTERM)
		if v.p.wait(10*time.Second) != nil {
			v.p.kill()
		}
	}
	if keep {
		v.s.printf("kept the server's directory %s", v.dir)
		return
	}
	_ = os.RemoveAll(v.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("killcheck: no TCP port")
	}
	return addr.Port, nil
}
