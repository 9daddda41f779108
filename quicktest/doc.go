// Package quicktest helps users of quickfdb test their own code, in the
// style of River's rivertest: assert that the code under test enqueued a
// job of a kind with given arguments and options (RequireEnqueued,
// RequireEnqueuedTx inside the caller's own transaction, RequireNotEnqueued,
// RequireManyEnqueued), and run a handler synchronously on a job (Work,
// WorkJob) without starting a worker.
//
// The assertions see the live jobs of a kind: scheduled, ready or leased.
// A job already completed, cancelled or dead-lettered is not "enqueued".
// Arguments compare by their JSON: the expected value is encoded as an
// insert would encode it and both sides are decoded before comparing, so
// field order and number formatting do not matter. On failure the message
// lists every live job of the kind with its arguments and options.
//
// The helpers take a TB (testing.T and testing.B satisfy it) and stop the
// test with Fatalf on failure.
package quicktest

import "context"

// TB is the part of testing.TB the helpers use. testing.T, testing.B and
// testing.F satisfy it; a fake can record failures to test the messages.
// The assertions read under Context, which the testing package cancels
// when the test ends.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Context() context.Context
}
