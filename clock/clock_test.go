package clock

import (
	"testing"
	"time"
)

func TestFakeWakesSleepersInOrder(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	a := f.After(2 * time.Second)
	b := f.After(time.Second)
	if f.Sleepers() != 2 {
		t.Fatalf("sleepers = %d, want 2", f.Sleepers())
	}
	f.Advance(1500 * time.Millisecond)
	select {
	case got := <-b:
		if !got.Equal(start.Add(1500 * time.Millisecond)) {
			t.Fatalf("b woke at %v", got)
		}
	default:
		t.Fatal("b did not wake after its deadline passed")
	}
	select {
	case <-a:
		t.Fatal("a woke before its deadline")
	default:
	}
	f.Set(start) // never backwards
	if !f.Now().Equal(start.Add(1500 * time.Millisecond)) {
		t.Fatalf("Set moved the clock backwards to %v", f.Now())
	}
	f.Advance(time.Second)
	<-a
	if f.Sleepers() != 0 {
		t.Fatalf("sleepers = %d, want 0", f.Sleepers())
	}
	if got := <-f.After(0); !got.Equal(f.Now()) {
		t.Fatalf("After(0) = %v", got)
	}
}

func TestFakeChangedSignalsNewSleeper(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ch := f.Changed()
	go f.After(time.Minute)
	<-ch
	if f.Sleepers() != 1 {
		t.Fatalf("sleepers = %d", f.Sleepers())
	}
}
