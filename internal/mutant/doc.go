// Package mutant holds the deliberate breaks ("mutants") of the queue's key
// protocol checks, so that CI can prove the test suite catches each one.
//
// A protocol check guarded by a mutant reads, for example:
//
//	if tok != lease.Token && !mutant.On("quick.token") { return ErrLeaseLost }
//
// In an ordinary build On is a constant false that the compiler folds away,
// so production code pays nothing. Built with -tags mutant, On reports whether
// the environment variable QUICKFDB_MUTANT names the mutant; .ci/mutants runs
// each mutant listed in .ci/mutants.txt against the tests that must catch it:
// first without the mutant (they must pass, and match a test), then with it,
// when a test must fail ("--- FAIL"). It fails if a mutant survives, or if
// its line errs (a build error or a crash is not a catch).
package mutant

// Env is the environment variable that selects the active mutant in a build
// with -tags mutant.
const Env = "QUICKFDB_MUTANT"
