package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

// job is a claimed job as the worker loop sees it.
type job struct {
	id      quick.ID
	attempt int
	lease   quick.Lease
}

// ackReq ends one run of a job: completed, or failed and to run again.
type ackReq struct {
	j    job
	fail bool
}

// strategy is one variant: how its queue is laid out and how its workers
// claim and acknowledge.
type strategy interface {
	// perSlot says each handler slot claims one job at a time, as the
	// recipe's consumer loop does; otherwise one claim fills every free slot.
	perSlot() bool
	// batchAcks says finished jobs are acknowledged together, as many as
	// are ready, instead of one transaction each.
	batchAcks() bool
	newClaimer(e *env, id string, members []string) claimer
}

// optionsStrategy is a strategy whose queue needs options of its own.
type optionsStrategy interface {
	queueOptions(o *quick.Options)
}

// tuneOptions applies s's queue options to o, if it has any.
func tuneOptions(s strategy) func(*quick.Options) {
	if t, ok := s.(optionsStrategy); ok {
		return t.queueOptions
	}
	return func(*quick.Options) {}
}

// claimer is one worker's side of a strategy.
type claimer interface {
	// claim takes up to max vested jobs; with none, next is when the
	// earliest scanned job vests (zero if unknown).
	claim(ctx context.Context, max int) (jobs []job, next time.Time, err error)
	// ack applies acks and returns how many found their lease lost.
	ack(ctx context.Context, reqs []ackReq) (lost int, err error)
}

func strategyFor(name string) (strategy, error) {
	switch name {
	case "zones":
		return zonesStrategy{}, nil
	case "zones-16":
		return zonesStrategy{zoneLanes: 16}, nil
	case "zones-keep":
		return zonesStrategy{keep: true}, nil
	case "zones-16-keep":
		return zonesStrategy{zoneLanes: 16, keep: true}, nil
	case "zones-scan":
		return &scanStrategy{group: scanGroup}, nil
	case "zones-scan-1":
		return &scanStrategy{}, nil
	case "zones-scan-rotate":
		return &scanStrategy{group: scanGroup, rotate: true}, nil
	}
	return nil, fmt.Errorf("bench: unknown variant %q (want one of %v, or zones-keep, zones-16-keep, zones-scan, zones-scan-1, zones-scan-rotate)", name, Variants)
}
