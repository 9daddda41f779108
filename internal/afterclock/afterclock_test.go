package afterclock

import (
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/clock"
)

// Timers and tickers built on a fake clock's After fire as its own do.
func TestOverFake(t *testing.T) {
	f := clock.NewFake(time.Unix(0, 0))
	tm := NewTimer(f.After, time.Second)
	tm.Stop()
	tm.Reset(2 * time.Second)
	waitSleepers(f, 2) // the stopped wait and the armed one
	f.Advance(2 * time.Second)
	if v := <-tm.C(); !v.Equal(time.Unix(2, 0)) {
		t.Fatalf("timer fired at %v", v)
	}
	select {
	case v := <-tm.C():
		t.Fatalf("stopped arming fired too, at %v", v)
	default:
	}
	tk := NewTicker(f.After, time.Second)
	for range 3 {
		waitSleepers(f, 1)
		f.Advance(time.Second)
		<-tk.C()
	}
	tk.Stop()
}

// waitSleepers waits until n goroutines sleep on f.
func waitSleepers(f *clock.Fake, n int) {
	for {
		ch := f.Changed()
		if f.Sleepers() >= n {
			return
		}
		<-ch
	}
}
