// Package fdbtest gives tests (quickfdb's own and its users') a database and
// a fresh, empty key subspace that is cleared when the test ends.
//
//	func TestSomething(t *testing.T) {
//		db, sub := fdbtest.Open(t)
//		q, _ := quick.Open(ctx, db, sub, quick.Options{}) // everything goes under sub
//		...
//	}
//
// # Engines
//
// By default (no build tag) Open returns the embedded engine kv/memkv: one
// database shared by all the tests of the process, each test in its own
// subspace, so a test that writes outside its subspace is noticed as it
// would be on a real cluster. OpenMem returns a private memkv database built
// with the given options (fault injection, latency, a fake clock...), closed
// when the test ends.
//
// Built with -tags fdb (which needs FoundationDB's client library, libfdb_c
// 7.3, and its headers), Open returns a real FoundationDB database instead:
//
//   - FDB_CLUSTER_FILE set: the cluster it names. Open probes it once per
//     process (a read with a 3-second transaction timeout, as an unreachable
//     cluster blocks rather than failing) and fails every test with a clear
//     message if it does not answer.
//   - FDB_CLUSTER_FILE unset: a throwaway single-process fdbserver on
//     127.0.0.1 (a free port, a fresh cluster file, data and log directories
//     in a temporary directory, "configure new single memory" through
//     fdbcli), started on first use and shared by the process's tests. The
//     binaries fdbserver and fdbcli are taken from the directory named by
//     QUICKFDB_FDB_BIN, else from PATH (then /usr/sbin, /usr/local/sbin,
//     /usr/bin, /usr/local/bin). QUICKFDB_FDBSERVER_ARGS adds arguments to
//     fdbserver's command line (space-separated, e.g. --knob_... settings).
//   - Neither: the test is skipped, with a message naming what is missing.
//
// The fdbserver started this way is killed when the test binary exits (on
// Linux through the parent-death signal). Call Main from TestMain to also
// stop it in an orderly way and remove its temporary directory:
//
//	func TestMain(m *testing.M) { fdbtest.Main(m) }
//
// Main is harmless on memkv. Set QUICKFDB_KEEP_FDB=1 to keep the temporary
// directory (logs) after Main.
//
// ClusterFile returns the path of the cluster file, for tests that start
// processes of their own against the same database (it skips on memkv).
//
// Subspaces are tuple.FromTuple(tuple.Tuple{"fdbtest", <random id>}); their
// whole prefix range is cleared in a transaction at cleanup (a crash leaves
// them behind on a real cluster).
package fdbtest
