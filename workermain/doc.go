// Package workermain is the main function of a worker binary: it parses the
// standard flags, opens FoundationDB and the queue, runs a worker.Worker
// until SIGINT or SIGTERM, and serves Prometheus metrics on request.
//
//	func main() {
//		workermain.Main(func(w *worker.Worker) error {
//			return worker.Register(w, sendEmail, worker.HandlerOptions{})
//		})
//	}
//
// It is a package of its own, apart from worker, because it links the
// database engines: kv/fdbkv for -cluster-file, and kv/memkv for the
// in-memory engine of demos and tests. A service that builds its workers
// in its own main imports worker alone and links no engine it does not
// use.
//
// The in-memory engine forgets everything when the process exits, so a
// production worker must never run on it by mistake: -embedded is refused
// unless the program allows it in code (MainOptions.AllowEmbedded, or
// Flags.AllowEmbedded), and a run that uses it logs a warning at start.
package workermain
