package kv

import (
	"errors"
	"fmt"
)

// Error is an FDB error: a numeric code from FDB's api-error-codes, the same
// on every engine. Test for a code with errors.Is against the sentinels below
// (errors.Is(err, kv.ErrNotCommitted)), extract it with errors.As, or use
// Code; never type-assert, since engines may wrap it (the FDB adapter's
// errors also match the binding's fdb.Error).
//
// A commit whose outcome is unknown is surfaced two ways. Codes 1021
// (commit_unknown_result), 1022 (commit_unknown_result_fatal) and 1039
// (cluster_version_changed) are always maybe-committed. Codes 1025 (transaction_cancelled) and 1031
// (transaction_timed_out) are maybe-committed only when they struck while a
// commit was in flight: engines then set DuringCommit, and IsMaybeCommitted
// reports true. Callers that must not apply a transaction twice check
// IsMaybeCommitted, not the code.
type Error struct {
	Code int
	// DuringCommit is set when the error struck after the commit was sent,
	// so the transaction may have committed.
	DuringCommit bool
}

// Sentinels for the codes the queue and engines use. errors.Is matches on
// the code alone.
var (
	ErrTransactionTooOld    = Error{Code: 1007}
	ErrFutureVersion        = Error{Code: 1009}
	ErrNotCommitted         = Error{Code: 1020}
	ErrCommitUnknownResult  = Error{Code: 1021}
	ErrTransactionCancelled = Error{Code: 1025}
	ErrTransactionTimedOut  = Error{Code: 1031}
	ErrTooManyWatches       = Error{Code: 1032}
	ErrAccessedUnreadable   = Error{Code: 1036}
	ErrProcessBehind        = Error{Code: 1037}
	ErrDatabaseLocked       = Error{Code: 1038}
	ErrClusterVersionChange = Error{Code: 1039}
	ErrBatchThrottled       = Error{Code: 1051}
	ErrTagThrottled         = Error{Code: 1213}
	ErrOperationCancelled   = Error{Code: 1101}
	ErrUsedDuringCommit     = Error{Code: 2017}
	ErrInvalidMutationType  = Error{Code: 2018}
	ErrInvertedRange        = Error{Code: 2005}
	ErrInvalidOptionValue   = Error{Code: 2006}
	ErrKeyOutsideLegalRange = Error{Code: 2004}
	ErrTransactionTooLarge  = Error{Code: 2101}
	ErrKeyTooLarge          = Error{Code: 2102}
	ErrValueTooLarge        = Error{Code: 2103}
	ErrClientInvalidOp      = Error{Code: 2000}
	ErrNoCommitVersion      = Error{Code: 2021}
	ErrInvalidVersion       = Error{Code: 2020}
	ErrProxyTagThrottled    = Error{Code: 1223}
)

// ErrCommitUnknownResultFatal (1022 commit_unknown_result_fatal) is what FDB
// 7.3 reports when a commit with an idempotency ID came back unknown and the
// cluster had already expired the IDs it would have to look in, so the
// outcome cannot be determined (fdbclient/NativeAPI.actor.cpp,
// determineCommitStatus). It is not retryable.
var ErrCommitUnknownResultFatal = Error{Code: 1022}

var errorNames = map[int]string{
	1007: "transaction_too_old",
	1009: "future_version",
	1020: "not_committed",
	1021: "commit_unknown_result",
	1022: "commit_unknown_result_fatal",
	1025: "transaction_cancelled",
	1031: "transaction_timed_out",
	1032: "too_many_watches",
	1036: "accessed_unreadable",
	1037: "process_behind",
	1038: "database_locked",
	1039: "cluster_version_changed",
	1042: "commit_proxy_memory_limit_exceeded",
	1051: "batch_transaction_throttled",
	1078: "grv_proxy_memory_limit_exceeded",
	1101: "operation_cancelled",
	1213: "tag_throttled",
	1223: "proxy_tag_throttled",
	2000: "client_invalid_operation",
	2004: "key_outside_legal_range",
	2005: "inverted_range",
	2006: "invalid_option_value",
	2017: "used_during_commit",
	2018: "invalid_mutation_type",
	2012: "range_limits_invalid",
	2020: "transaction_invalid_version",
	2021: "no_commit_version",
	2109: "too_many_tags",
	2110: "tag_too_long",
	2101: "transaction_too_large",
	2102: "key_too_large",
	2103: "value_too_large",
}

// Name returns FDB's name for the code, or "unknown_error".
func (e Error) Name() string {
	if n, ok := errorNames[e.Code]; ok {
		return n
	}
	return "unknown_error"
}

func (e Error) Error() string {
	s := fmt.Sprintf("fdb error %d (%s)", e.Code, e.Name())
	if e.DuringCommit {
		s += " during commit: the transaction may have committed"
	}
	return s
}

// Is matches another Error with the same code, so the sentinels work with
// errors.Is whatever DuringCommit holds.
func (e Error) Is(target error) bool {
	t, ok := target.(Error)
	return ok && t.Code == e.Code
}

// Code returns the FDB error code in err's chain, or 0 if there is none.
func Code(err error) int {
	var e Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// MaybeCommittedError wraps the error that ended a retry loop in which an
// earlier attempt may have committed (it ended in commit_unknown_result, or
// a timeout or cancellation struck its commit in flight): whatever the last
// attempt's error says, the loop's outcome is unknown. Retry returns it, so
// that IsMaybeCommitted holds for the loop as a whole and not only for its
// last attempt.
type MaybeCommittedError struct {
	Err error
}

func (e *MaybeCommittedError) Error() string {
	return e.Err.Error() + " (an earlier attempt may have committed)"
}

// Unwrap returns the error that ended the loop.
func (e *MaybeCommittedError) Unwrap() error { return e.Err }

// maybeCommitted wraps err in a MaybeCommittedError when an earlier attempt
// may have committed and err does not say so itself.
func maybeCommitted(err error, maybe bool) error {
	if err == nil || !maybe || IsMaybeCommitted(err) {
		return err
	}
	return &MaybeCommittedError{Err: err}
}

// IsMaybeCommitted reports whether err leaves the transaction's outcome
// unknown: it may have committed. FDB's fdb_error_predicate
// MAYBE_COMMITTED holds 1021 and 1039; 1022 (commit_unknown_result_fatal,
// which only a transaction with an idempotency ID can get) is added here
// although FDB's predicate lacks it, as its outcome is just as unknown; 1025
// and 1031 join them when they struck during a commit; and a retry loop's
// error is maybe-committed when any of its attempts was
// (MaybeCommittedError).
func IsMaybeCommitted(err error) bool {
	var m *MaybeCommittedError
	if errors.As(err, &m) {
		return true
	}
	var e Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case 1021, 1022, 1039:
		return true
	case 1025, 1031:
		return e.DuringCommit
	}
	return false
}

// IsRetryableNotCommitted reports whether err is retryable and certainly did
// not commit (fdb_error_predicate RETRYABLE_NOT_COMMITTED in release-7.3's
// bindings/c/fdb_c.cpp, which includes 1223 proxy_tag_throttled).
func IsRetryableNotCommitted(err error) bool {
	switch Code(err) {
	case 1007, 1009, 1020, 1037, 1038, 1042, 1051, 1078, 1213, 1223:
		return true
	}
	return false
}

// IsRetryable reports whether OnError retries err (fdb_error_predicate
// RETRYABLE: maybe-committed codes 1021 and 1039, or retryable and not
// committed). 1025 and 1031 are never retried, even during a commit.
func IsRetryable(err error) bool {
	switch Code(err) {
	case 1021, 1039:
		return true
	}
	return IsRetryableNotCommitted(err)
}
