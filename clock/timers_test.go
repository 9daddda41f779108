package clock

import (
	"testing"
	"time"
)

func received(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

// A fake Timer fires once at its deadline; Stop and Reset disarm it and
// leave no stale value, as time.Timer does since Go 1.23.
func TestFakeTimer(t *testing.T) {
	start := time.Unix(1000, 0)
	f := NewFake(start)
	tm := f.NewTimer(time.Second)
	if f.Sleepers() != 1 {
		t.Fatalf("sleepers = %d, want 1", f.Sleepers())
	}
	f.Advance(999 * time.Millisecond)
	if _, ok := received(tm.C()); ok {
		t.Fatal("timer fired before its deadline")
	}
	f.Advance(time.Millisecond)
	if v, ok := received(tm.C()); !ok || !v.Equal(start.Add(time.Second)) {
		t.Fatalf("timer at its deadline: %v %v", v, ok)
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer returned true")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a fired timer returned true")
	}
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer returned false")
	}
	f.Advance(time.Hour)
	if _, ok := received(tm.C()); ok {
		t.Fatal("stopped timer fired")
	}
	// Fired but not received: Reset drains the stale value.
	tm.Reset(time.Second)
	f.Advance(time.Second)
	tm.Reset(time.Minute)
	if _, ok := received(tm.C()); ok {
		t.Fatal("stale value after Reset")
	}
	f.Advance(time.Minute)
	if _, ok := received(tm.C()); !ok {
		t.Fatal("reset timer did not fire")
	}
	if f.Sleepers() != 0 {
		t.Fatalf("sleepers = %d, want 0", f.Sleepers())
	}
}

// A fake Ticker fires every period, at most once per move of the clock
// (ticks a slow receiver misses are dropped), until stopped.
func TestFakeTicker(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ch := f.Changed()
	tk := f.NewTicker(time.Second)
	<-ch // registering a ticker signals Changed
	if f.Tickers() != 1 || f.Sleepers() != 0 {
		t.Fatalf("tickers = %d, sleepers = %d", f.Tickers(), f.Sleepers())
	}
	f.Advance(500 * time.Millisecond)
	if _, ok := received(tk.C()); ok {
		t.Fatal("ticked early")
	}
	f.Advance(500 * time.Millisecond)
	if _, ok := received(tk.C()); !ok {
		t.Fatal("no tick after one period")
	}
	f.Advance(5 * time.Second) // one tick, not five
	f.Advance(time.Second)     // dropped: the receiver has not taken the last
	if _, ok := received(tk.C()); !ok {
		t.Fatal("no tick after five periods")
	}
	if _, ok := received(tk.C()); ok {
		t.Fatal("more than one tick buffered")
	}
	tk.Reset(time.Minute)
	f.Advance(time.Second)
	if _, ok := received(tk.C()); ok {
		t.Fatal("ticked on the old period after Reset")
	}
	f.Advance(time.Minute)
	if _, ok := received(tk.C()); !ok {
		t.Fatal("no tick on the new period")
	}
	tk.Stop()
	f.Advance(time.Hour)
	if _, ok := received(tk.C()); ok || f.Tickers() != 0 {
		t.Fatalf("stopped ticker ticked (%v) or still counted (%d)", ok, f.Tickers())
	}
}

// The real clock's timers and tickers are the time package's.
func TestRealTimerAndTicker(t *testing.T) {
	c := Real()
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
	if tm.Stop() {
		t.Fatal("Stop of a fired real timer returned true")
	}
}
