package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quickfdb/quickfdb/clock"
	"github.com/quickfdb/quickfdb/internal/afterclock"
)

// freezeClock is an in-process worker's time: real time, pausable. The
// worker runtime and the handlers sleep only through After (and the
// timers and tickers built on it), so holding every After while frozen
// stops the worker as a stopped process would: its lease keeper stops
// renewing and its handlers stop, while the other workers' time, and so
// the lease deadlines they see, moves on. When it thaws, its runs go on
// under leases that lapsed and were taken over: every write they try must
// be refused (the stale-token check).
type freezeClock struct {
	mu     sync.Mutex
	resume chan struct{} // non-nil while frozen; closed when it thaws
}

var _ clock.Clock = (*freezeClock)(nil)

func (c *freezeClock) Now() time.Time { return time.Now() }

func (c *freezeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	go func() {
		if d > 0 {
			t := time.NewTimer(d)
			<-t.C
		}
		c.mu.Lock()
		r := c.resume
		c.mu.Unlock()
		if r != nil {
			<-r
		}
		ch <- time.Now()
	}()
	return ch
}

func (c *freezeClock) NewTimer(d time.Duration) clock.Timer { return afterclock.NewTimer(c.After, d) }

func (c *freezeClock) NewTicker(d time.Duration) clock.Ticker {
	return afterclock.NewTicker(c.After, d)
}

// freeze stops the clock for d (or until ctx ends) and returns when it
// thawed.
func (c *freezeClock) freeze(ctx context.Context, d time.Duration) {
	r := make(chan struct{})
	c.mu.Lock()
	c.resume = r
	c.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	c.mu.Lock()
	c.resume = nil
	c.mu.Unlock()
	close(r)
}

// freezer holds the clocks of the in-process workers and freezes them in
// turn.
type freezer struct {
	mu     sync.Mutex
	names  []string
	clocks map[string]*freezeClock
	turn   int
}

func (f *freezer) clock(name string) *freezeClock {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clocks == nil {
		f.clocks = map[string]*freezeClock{}
	}
	c := &freezeClock{}
	f.clocks[name] = c
	f.names = append(f.names, name)
	return c
}

// fault freezes the next worker for d: longer than a lease, so that its
// jobs are taken over.
func (f *freezer) fault(d time.Duration) Fault {
	return Fault{Name: "freeze a worker", Do: func(ctx context.Context) (string, error) {
		f.mu.Lock()
		if len(f.names) == 0 {
			f.mu.Unlock()
			return "", fmt.Errorf("no worker to freeze")
		}
		name := f.names[f.turn%len(f.names)]
		f.turn++
		c := f.clocks[name]
		f.mu.Unlock()
		c.freeze(context.WithoutCancel(ctx), d) // the thaw must come, even after the chaos ends
		return fmt.Sprintf("%s frozen for %v", name, d), nil
	}}
}
