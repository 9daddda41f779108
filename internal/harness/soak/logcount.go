package soak

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// refusedStart is the worker's warning when it does not start a prefetched
// job whose lease it knows lost (worker/runner.go): the soak counts them,
// to show that its cancels and freezes reach that path.
const refusedStart = "worker: not starting a prefetched job"

// countHandler passes records on to inner and counts the refused starts.
type countHandler struct {
	inner   slog.Handler
	refused *atomic.Int64
}

func (c countHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || c.inner.Enabled(ctx, l)
}

func (c countHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == refusedStart {
		c.refused.Add(1)
	}
	if !c.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return c.inner.Handle(ctx, r)
}

func (c countHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return countHandler{inner: c.inner.WithAttrs(as), refused: c.refused}
}

func (c countHandler) WithGroup(name string) slog.Handler {
	return countHandler{inner: c.inner.WithGroup(name), refused: c.refused}
}
