// Package testhook carries three operations from quick and worker to
// quicktest without making them part of either package's public API:
// claiming one job by ID, listing a task type's jobs with their records
// inside a caller's transaction, and running one handler synchronously
// exist for tests only, and an export would be a compatibility promise to
// everyone.
//
// quick and worker set the variables in their init functions; the values
// are typed by their setters (quick/claimone.go, quick/jobstx.go,
// worker/workone.go), since this package cannot import the packages that
// import it.
package testhook

// ClaimOne is quick's claim of one job by ID:
// func(ctx context.Context, q *quick.Queue, id quick.ID, holder string, lease time.Duration) (quick.Lease, error).
var ClaimOne any

// WorkOne is worker's synchronous run of one leased job:
// func(ctx context.Context, w *worker.Worker, l quick.Lease) (quick.AckKind, quick.AckResult, error, error);
// see worker/workone.go.
var WorkOne any

// JobsTx is quick's listing of a task type's live jobs, with their
// records, inside a read transaction:
// func(rt kv.ReadTransaction, q *quick.Queue, taskType string, limit int) ([]quick.JobInfo, bool, error).
var JobsTx any

// PlaceZone is quick's placing of one job into its zone (the zones
// layout) by hand, for the CLI's and the console's tests while the zones
// enqueue is built on another branch:
// func(ctx context.Context, q *quick.Queue, j quick.NewJob) (quick.ID, error).
var PlaceZone any
