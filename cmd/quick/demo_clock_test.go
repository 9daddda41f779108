package main

import (
	"testing"
	"time"
)

// TestLapseClock: the reading is continuous across rate changes, and a
// sleeper started at rate 1 wakes early when the rate goes up.
func TestLapseClock(t *testing.T) {
	c := newLapseClock()
	t0 := c.Now()
	wake := c.After(time.Hour)
	c.SetRate(1e6) // an hour of clock in 3.6 ms of real time
	select {
	case now := <-wake:
		if now.Sub(t0) < time.Hour {
			t.Errorf("woke at +%v, before the hour", now.Sub(t0))
		}
	case <-time.After(time.Minute):
		t.Fatal("a sleeper did not wake after the rate went up")
	}
	before := c.Now()
	c.SetRate(1)
	if after := c.Now(); after.Before(before) {
		t.Errorf("clock went back from %v to %v", before, after)
	}
	if c.Rate() != 1 {
		t.Errorf("rate %v", c.Rate())
	}
}
