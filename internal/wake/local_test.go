package wake

import "testing"

type db struct{ n int }

// A notification reaches the channels subscribed for its database, root
// and task type, and no others; a cancelled subscription gets nothing and
// leaves no hub behind.
func TestNotifyReachesOnlyItsSubscribers(t *testing.T) {
	a, b := &db{1}, &db{2}
	root := []byte("r")
	mine := make(chan struct{}, 1)
	other := make(chan struct{}, 1)
	cancel := Subscribe(a, root, "email", mine)
	cancelOther := Subscribe(b, root, "email", other)
	Notify(a, root, "email")
	Notify(a, root, "email") // a full channel keeps its one wake-up
	Notify(a, root, "sms")
	Notify(a, []byte("s"), "email")
	if len(mine) != 1 || len(other) != 0 {
		t.Fatalf("mine %d, other %d; want 1 and 0", len(mine), len(other))
	}
	<-mine
	cancel()
	cancel()
	Notify(a, root, "email")
	if len(mine) != 0 {
		t.Fatal("a cancelled subscription was notified")
	}
	cancelOther()
	mu.Lock()
	n := len(hubs)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("%d hubs left after every subscription was cancelled", n)
	}
	// A database that is not comparable gets no hub, and no panic.
	type unhashable struct{ f []int }
	Subscribe(unhashable{}, root, "email", mine)()
	Notify(unhashable{}, root, "email")
}
