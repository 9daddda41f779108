package procbench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// fakeChildEnv makes the test binary act as a child for TestExecChild: it
// prints a ready line, burns some CPU, and on SIGTERM prints an exit line
// and exits with the status the variable names.
const fakeChildEnv = "PROCBENCH_TEST_FAKE_CHILD"

func TestMain(m *testing.M) {
	if code := os.Getenv(fakeChildEnv); code != "" {
		fakeChild(code)
	}
	os.Exit(m.Run())
}

func fakeChild(code string) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println(`{"kind":"ready","id":"fake"}`)
	for end, x := time.Now().Add(50*time.Millisecond), 0; time.Now().Before(end); x++ {
		_ = x * x
	}
	<-term
	fmt.Println(`{"kind":"exit","id":"fake","completed":7}`)
	var n int
	fmt.Sscan(code, &n)
	os.Exit(n)
}

// TestExecChild starts this test binary as a child process through Exec:
// its report lines come through Output, SIGTERM stops it, and Wait gives
// its CPU time from its rusage, and its exit status as an error.
func TestExecChild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"0", "3"} {
		dir := t.TempDir()
		spawn := Exec(self, []string{"-test.run=^$"}, []string{fakeChildEnv + "=" + code}, dir)
		c, err := spawn(context.Background(), "fake", nil)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(c.Output())
		var kinds []string
		for sc.Scan() {
			l, err := ParseLine(sc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, l.Kind)
			if l.Kind == lineReady {
				if err := c.Stop(); err != nil {
					t.Fatal(err)
				}
			}
		}
		cpu, err := c.Wait()
		if fmt.Sprint(kinds) != "[ready exit]" {
			t.Errorf("exit %s: lines %v, want ready then exit", code, kinds)
		}
		if cpu < 10*time.Millisecond {
			t.Errorf("exit %s: CPU %v, want at least the 50 ms the child burned", code, cpu)
		}
		if (code == "0") != (err == nil) {
			t.Errorf("exit %s: Wait: %v", code, err)
		}
		if _, err := os.Stat(dir + "/fake.log"); err != nil {
			t.Errorf("no log: %v", err)
		}
	}
}
