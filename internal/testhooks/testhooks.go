// Package testhooks reaches, for this module's tests, demos and soak runs,
// operations that are no part of the public API because no production code
// should call them: a worker's crash. Packages set the hooks in their init,
// so a hook is set wherever the package it belongs to is linked.
package testhooks

// KillWorker stops a *worker.Worker at once, as a crash would: no release,
// no ack flush, no deregistration; its jobs stay leased until their leases
// lapse. Run then returns worker.ErrKilled. It waits for the worker's own
// loops (not its handlers) to exit. Set by package worker; it takes any
// because worker imports this package.
var KillWorker func(w any)
