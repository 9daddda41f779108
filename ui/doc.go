// Package ui is quickfdb's operator console: an http.Handler with pages for
// the queue's task types, its tenants and each tenant's zone (its lanes),
// jobs, retries, dead letters, cron schedules, workers by process and the
// fleet's throughput, and confirmed actions (requeue, cancel, purge, cron repair,
// pause and resume of a task type, run now, cancel and requeue by filter).
// It serves no /metrics: mount metrics.Handler() beside it (quick ui does).
//
// Mount it in a service of your own, as River UI is mounted:
//
//	h, err := ui.New(ui.Config{Queue: q, Prefix: "/queue"})
//	...
//	defer h.Close()
//	mux.Handle("/queue/", h)
//
// It has no login of its own: put it behind your service's middleware, or
// BasicAuth, RequireToken or RequireAuth (constant-time comparisons).
//
// Or run it with `quick ui --listen 127.0.0.1:8080` (on an address other
// than loopback, quick ui asks for credentials). It is built on the
// standard library alone (net/http, html/template, embedded assets; plain
// JavaScript refreshes the live parts of a page). Every number it shows and
// every action it takes is a call of the quick, cron or worker packages, with
// the cost those document; nothing reads or writes keys behind the
// library's back. See docs/ui.md.
package ui
