package memkv

import "github.com/quickfdb/quickfdb/kv"

// FDB error codes the engine raises that the kv package has no sentinel for.
// Their names are in FDB's flow/error_definitions.h.
const (
	codeRangeLimitsInvalid        = 2012 // range_limits_invalid
	codeTransactionInvalidVersion = 2020 // transaction_invalid_version
	codeTooManyTags               = 2109 // too_many_tags
	codeTagTooLong                = 2110 // tag_too_long
)

var (
	errTooOld             error = kv.ErrTransactionTooOld
	errNotCommitted       error = kv.ErrNotCommitted
	errCancelled          error = kv.ErrTransactionCancelled
	errTimedOut           error = kv.ErrTransactionTimedOut
	errTooManyWatches     error = kv.ErrTooManyWatches
	errUnreadable         error = kv.ErrAccessedUnreadable
	errOperationCancelled error = kv.ErrOperationCancelled
	errUsedDuringCommit   error = kv.ErrUsedDuringCommit
	errInvalidMutation    error = kv.ErrInvalidMutationType
	errInvertedRange      error = kv.ErrInvertedRange
	errInvalidOption      error = kv.ErrInvalidOptionValue
	errOutsideLegalRange  error = kv.ErrKeyOutsideLegalRange
	errTooLarge           error = kv.ErrTransactionTooLarge
	errKeyTooLarge        error = kv.ErrKeyTooLarge
	errValueTooLarge      error = kv.ErrValueTooLarge
	errInvalidOperation   error = kv.ErrClientInvalidOp
	errNoCommitVersion    error = kv.ErrNoCommitVersion
	errInvalidVersion     error = kv.Error{Code: codeTransactionInvalidVersion}
	errRangeLimitsInvalid error = kv.Error{Code: codeRangeLimitsInvalid}
	errTooManyTags        error = kv.Error{Code: codeTooManyTags}
	errTagTooLong         error = kv.Error{Code: codeTagTooLong}
)

// duringCommit marks a cancellation or timeout that struck while a commit was
// in flight, so kv.IsMaybeCommitted reports it.
func duringCommit(err error) error {
	if e, ok := err.(kv.Error); ok && (e.Code == 1025 || e.Code == 1031) {
		e.DuringCommit = true
		return e
	}
	return err
}
