package main

import (
	"context"
	"encoding/json"
	"fmt"
)

// peerArgs is the one job every system runs: it carries the time its
// enqueue call started (Unix nanoseconds, same process), so the handler can
// measure enqueue-to-start latency.
type peerArgs struct {
	T int64 `json:"t"`
}

// Kind names the task type for River and quickfdb; Asynq uses it as the
// task type name too.
func (peerArgs) Kind() string { return "peer_noop" }

func encodeArgs(t int64) []byte {
	b, _ := json.Marshal(peerArgs{T: t}) // a struct of one int64 cannot fail
	return b
}

func decodeArgs(b []byte) (int64, error) {
	var a peerArgs
	if err := json.Unmarshal(b, &a); err != nil {
		return 0, fmt.Errorf("peer job payload: %w", err)
	}
	return a.T, nil
}

// startFunc is called by a handler as it starts: stamp is the job's payload
// (when its enqueue call started), at the handler's start; both are Unix
// nanoseconds. The handler takes at itself so that a start reported by a
// worker process (procs.go) arrives late without looking late.
type startFunc func(stamp, at int64)

// system is one queue under test, used as its documentation shows: a
// client that enqueues, and a worker (server) that runs a no-op handler.
type system interface {
	// Name is the row label.
	Name() string
	// Reset empties the queue so a workload starts from nothing.
	Reset(ctx context.Context) error
	// EnqueueBatch enqueues one job per stamp in the system's bulk form.
	EnqueueBatch(ctx context.Context, stamps []int64) error
	// Enqueue enqueues one job.
	Enqueue(ctx context.Context, stamp int64) error
	// Start starts a worker with slots handler slots whose handler calls
	// onStart with the job's stamp and the time it started, and returns nil.
	Start(ctx context.Context, slots int, onStart startFunc) error
	// Stop stops the worker gracefully: in-flight completions are flushed.
	Stop(ctx context.Context) error
	// ServerPIDs are the roots of the server process trees whose CPU
	// counts with the client's (none for the in-process engine).
	ServerPIDs() []int
	// Close releases the connections.
	Close() error
}
