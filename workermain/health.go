package workermain

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/quickfdb/quickfdb/kv"
)

// readyTimeout bounds /readyz's database round trip: an orchestrator's
// probe usually gives up after a second or a few, and a database that
// takes longer to hand out a read version cannot serve claims either.
const readyTimeout = 2 * time.Second

// healthz answers 200 while the process serves HTTP: the liveness probe.
// It reads nothing: a database outage must not get healthy workers
// restarted (readiness says that).
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

// readyz answers 200 when the worker claims jobs now (ready: running, not
// stopping, not standing by for the clock check; worker.Ready) and the
// database hands out a read version within timeout; else 503 with the
// reason on one line.
//
// Keys: none; one read version from the database per probe.
func readyz(ready func() error, db kv.Database, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			_, err := tr.GetReadVersion().Get()
			return err
		})
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: database not reachable within %v: %v\n", timeout, err)
			return
		}
		fmt.Fprintln(w, "ready")
	})
}
