// Package testhooks reaches, for this module's tests, demos and soak runs,
// operations that are no part of the public API because no production code
// should call them: a worker's crash, and when a worker claimed a job.
// Packages set the hooks in their init, so a hook is set wherever the
// package it belongs to is linked.
package testhooks

import "time"

// KillWorker stops a *worker.Worker at once, as a crash would: no release,
// no ack flush, no deregistration; its jobs stay leased until their leases
// lapse. Run then returns worker.ErrKilled. It waits for the worker's own
// loops (not its handlers) to exit. Set by package worker; it takes any
// because worker imports this package.
var KillWorker func(w any)

// ClaimedAt returns when the worker claimed the job a handler was given (a
// *worker.Job[T]), on the worker's clock. That may be long before the
// handler started: a zones worker holds claimed jobs until a handler slot
// frees (prefetch), and one that was frozen starts them when it wakes,
// perhaps after their leases lapsed and the jobs were dead-lettered and
// requeued. The soak tells a lease issued before a requeue from one issued
// after by it. Set by package worker.
var ClaimedAt func(job any) time.Time

// StartedLost returns why the worker already knew, when it started the
// handler of the job a handler was given (a *worker.Job[T]), that the
// job's lease was lost or ended: nil when it did not. The worker decides
// whether a claimed job may start under the job's lock, and records what it
// knew there, so a loss learned after the start is never reported. A
// non-nil answer is a run doubled (issue 22, item 4): the soak counts them,
// and must count 0. Set by package worker.
var StartedLost func(job any) error
