//go:build fdb

package fdbtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeBinaries writes shell scripts standing in for fdbserver (sleeps until
// killed, recording its arguments) and fdbcli (fails failures times, then
// prints what configure prints on success).
func fakeBinaries(t *testing.T, failures int, success string) (binaries, string) {
	t.Helper()
	dir := t.TempDir()
	server := filepath.Join(dir, "fdbserver")
	cli := filepath.Join(dir, "fdbcli")
	args := filepath.Join(dir, "server-args")
	count := filepath.Join(dir, "cli-count")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	msg := filepath.Join(dir, "cli-success")
	write(msg, success+"\n")
	write(server, "#!/bin/sh\necho \"$@\" > "+args+"\nexec sleep 600\n")
	write(cli, "#!/bin/sh\n"+
		"n=$(cat "+count+" 2>/dev/null || echo 0)\n"+
		"echo $((n+1)) > "+count+"\n"+
		"if [ \"$n\" -lt "+strconv.Itoa(failures)+" ]; then echo 'ERROR: unable to connect'; exit 1; fi\n"+
		"cat "+msg+"\n")
	return binaries{server: server, cli: cli}, args
}

func TestLaunchConfiguresAndStops(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	bins, argsFile := fakeBinaries(t, 2, "Database created")
	s, err := launchServer(bins, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s.hasExited() {
		t.Fatal("fake fdbserver exited early")
	}
	cf, err := os.ReadFile(s.clusterFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(cf), "fdbtest:") || !strings.Contains(string(cf), "@127.0.0.1:") {
		t.Fatalf("cluster file %q", cf)
	}
	args, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-p 127.0.0.1:", "-C " + s.clusterFile, "-d " + filepath.Join(s.dir, "data"), "-L " + filepath.Join(s.dir, "logs")} {
		if !strings.Contains(string(args), want) {
			t.Errorf("fdbserver arguments %q lack %q", args, want)
		}
	}
	s.stop(false)
	if !s.hasExited() {
		t.Fatal("fdbserver still running after stop")
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s not removed: %v", s.dir, err)
	}
}

func TestLaunchAcceptsAnExistingDatabase(t *testing.T) {
	bins, _ := fakeBinaries(t, 0, "ERROR: Database already exists! To change configuration, don't say `new'")
	s, err := launchServer(bins, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s.stop(false)
}

func TestLaunchFailsWhenTheServerDies(t *testing.T) {
	bins, _ := fakeBinaries(t, 1000, "")
	if err := os.WriteFile(bins.server, []byte("#!/bin/sh\necho boom; exit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := launchServer(bins, time.Now().Add(30*time.Second))
	if err == nil {
		s.stop(false)
		t.Fatal("launch succeeded with a dying fdbserver")
	}
	if !strings.Contains(err.Error(), "fdbserver exited") {
		t.Fatalf("error %q does not say fdbserver exited", err)
	}
	// The directory is kept for its logs; remove it here.
	if i := strings.LastIndex(err.Error(), "(logs in "); i >= 0 {
		os.RemoveAll(strings.TrimSuffix(err.Error()[i+len("(logs in "):], ")"))
	}
}
