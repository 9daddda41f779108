// Package kv is the storage contract quickfdb is written against: an ordered
// key-value store with FoundationDB's transaction semantics.
//
// The contract is shaped after FoundationDB's Go binding so that the FDB
// adapter (kv/fdbkv) is thin and a user's own fdb.Transaction can be wrapped
// into a kv.Transaction, letting jobs commit in the caller's transaction. The
// embedded engine (kv/memkv) implements the same rules in pure Go, and one
// conformance suite (kv/kvtest) holds both engines to them.
//
// The rules an implementation must follow are FoundationDB's:
//   - Transactions are serializable and optimistic. A commit fails with 1020
//     (not_committed) exactly when another transaction that committed after
//     this one's read version wrote into one of its read-conflict ranges.
//     Writes never conflict with writes.
//   - Reads through Snapshot add no read-conflict ranges. A limited range read
//     conflicts only on the part it actually read.
//   - The read version is taken lazily: at the first read, at an explicit
//     GetReadVersion, or at commit.
//   - Reads see the transaction's own writes (atomic operations included).
//   - Keys are at most 10,000 bytes, values 100,000 bytes, a transaction's
//     mutations and conflict ranges 10,000,000 bytes; a transaction lives 5
//     seconds from its read version.
//
// Errors carry FDB's numeric codes (see Error) and are classified as
// fdb_error_predicate classifies them, so code written against kv behaves the
// same on both engines.
package kv

import (
	"context"
)

// KeyValue is one key and its value, as returned by range reads.
type KeyValue struct {
	Key   []byte
	Value []byte
}

// KeyRange is the half-open interval [Begin, End) of keys.
type KeyRange struct {
	Begin []byte
	End   []byte
}

// RangeOptions shape a range read. The zero value reads the whole range in
// ascending order.
type RangeOptions struct {
	// Limit caps the number of key-value pairs returned; 0 means no limit.
	Limit int
	// Reverse returns pairs in descending key order. With a limit, the read
	// starts from the end of the range.
	Reverse bool
}

// Future is a value that becomes available later, as in FDB's binding. Reads
// return futures so that one transaction can have many reads in flight at once:
// issue them all, then Get each.
type Future[T any] interface {
	// Get blocks until the value is ready and returns it.
	Get() (T, error)
}

// RangeResult is a range read in flight. Like FDB's, it fetches lazily: the
// read-conflict range it adds covers what was actually fetched.
type RangeResult interface {
	// GetSliceWithError reads the whole (limited) range and returns it.
	GetSliceWithError() ([]KeyValue, error)
	// Iterator streams the range.
	Iterator() RangeIterator
}

// RangeIterator streams a range read. Advance must be called before each Get.
type RangeIterator interface {
	// Advance reports whether another pair is available (or an error is
	// pending for Get to return).
	Advance() bool
	// Get returns the current pair, or the error that ended the stream.
	Get() (KeyValue, error)
}

// Watch is a watch armed by a committed transaction. It fires when the watched
// key's value changes from the value the transaction could read. A change that
// reverts the value before the watch observes it may be missed.
type Watch interface {
	// Wait blocks until the watch fires (nil), fails (its error), or ctx is
	// done (ctx.Err(); the watch stays armed and Wait may be called again).
	// A watch whose transaction did not commit fails with the commit's error.
	Wait(ctx context.Context) error
	// Cancel releases the watch; Wait then returns an error with code 1101
	// (operation_cancelled).
	Cancel()
}

// ReadTransaction is the read side of a transaction, shared by a transaction
// and its snapshot view.
type ReadTransaction interface {
	// Get reads one key. The future yields nil for a missing key and a
	// non-nil (possibly empty) slice for a present one.
	Get(key []byte) Future[[]byte]
	// GetRange reads the keys in r, in order.
	GetRange(r KeyRange, opts RangeOptions) RangeResult
	// GetReadVersion returns the transaction's read version, taking one if
	// none was taken yet.
	GetReadVersion() Future[int64]
	// Snapshot returns a view whose reads add no read-conflict ranges.
	Snapshot() ReadTransaction
}

// Transaction is one FDB transaction. It is not safe for concurrent use
// except for issuing and waiting on reads, which may proceed in parallel.
type Transaction interface {
	ReadTransaction

	// Set writes value at key. Mutations return no error, as in FDB: a key
	// or value over the limits (2102, 2103) is reported by the next
	// operation or by Commit, and nothing of the transaction is applied.
	Set(key, value []byte)
	// Clear removes key.
	Clear(key []byte)
	// ClearRange removes every key in r.
	ClearRange(r KeyRange)

	// Atomic applies an atomic operation. It adds no read-conflict range.
	Atomic(op MutationType, key, param []byte)
	// Add adds a little-endian integer param to the value at key.
	Add(key, param []byte)
	// Max stores the larger of param and the value at key, both read as
	// little-endian unsigned integers.
	Max(key, param []byte)
	// Min stores the smaller of param and the value at key, both read as
	// little-endian unsigned integers (a missing key takes param).
	Min(key, param []byte)
	// CompareAndClear clears key if its value equals param.
	CompareAndClear(key, param []byte)

	// SetVersionstampedKey writes value at a key containing the commit's
	// versionstamp. The last 4 bytes of key are the little-endian offset of a
	// 10-byte placeholder, which is replaced at commit.
	SetVersionstampedKey(key, value []byte)
	// SetVersionstampedValue writes a value containing the commit's
	// versionstamp. The last 4 bytes of value are the little-endian offset of
	// the 10-byte placeholder.
	SetVersionstampedValue(key, value []byte)
	// GetVersionstamp returns the 10-byte versionstamp this transaction
	// commits with. The future is ready once the transaction commits. If the
	// commit fails it fails too (FDB 7.3 reports 2020
	// transaction_invalid_version rather than the commit's error); for a
	// read-only transaction it fails with 2021 no_commit_version. Call it
	// before Commit (after, FDB answers 2017 used_during_commit).
	GetVersionstamp() Future[[]byte]

	// AddReadConflictKey makes the transaction conflict as if it had read key.
	AddReadConflictKey(key []byte) error
	// AddReadConflictRange makes the transaction conflict as if it had read r.
	AddReadConflictRange(r KeyRange) error
	// AddWriteConflictKey makes other transactions conflict as if this one
	// had written key.
	AddWriteConflictKey(key []byte) error
	// AddWriteConflictRange makes other transactions conflict as if this one
	// had written r.
	AddWriteConflictRange(r KeyRange) error

	// Watch arms a watch on key when this transaction commits. Setting it
	// reads key (taking a read version and adding a read conflict, as FDB's
	// watch does), and counts against the database's watch limit (1032
	// too_many_watches) from the moment it is created.
	Watch(key []byte) Watch

	// GetApproximateSize is the approximate size in bytes of the mutations
	// and conflict ranges so far, the figure FDB compares with its
	// 10,000,000-byte transaction limit.
	GetApproximateSize() Future[int64]

	// Options returns the transaction's option setter. Options survive
	// OnError resets on every engine. FDB itself keeps only those marked
	// persistent in fdb.options (timeout, retry limit, max retry delay, from
	// API version 610) and drops the rest; the FDB adapter sets them again.
	Options() TransactionOptions

	// Commit commits the transaction. A nil error means it committed.
	Commit() error
	// GetCommittedVersion returns the version the transaction committed at;
	// -1 for a read-only transaction and before a commit.
	GetCommittedVersion() (int64, error)
	// OnError decides whether err may be retried. For a retryable error it
	// waits a backoff, resets the transaction and returns nil; otherwise it
	// returns err.
	OnError(err error) error
	// Reset returns the transaction to its initial state, keeping the
	// options set through Options (FDB's own reset clears them; the adapter
	// sets them again, so code behaves the same on every engine).
	Reset()
	// Cancel cancels the transaction: pending and later operations fail with
	// 1025 (transaction_cancelled).
	Cancel()
}

// TransactionOptions sets per-transaction options, as FDB's
// TransactionOptions does. Each setter returns an error only when the engine
// rejects the value.
type TransactionOptions interface {
	// SetTimeout bounds the transaction and its retries (1031 after it). Zero
	// removes the bound.
	SetTimeout(milliseconds int64) error
	// SetRetryLimit bounds the number of retries OnError allows; -1 (the
	// default) means no limit.
	SetRetryLimit(limit int64) error
	// SetPriorityBatch lowers the transaction to batch priority, so that a
	// loaded cluster throttles it before default-priority work.
	SetPriorityBatch() error
	// SetTag adds a throttling tag: at most 255 bytes (2110 tag_too_long)
	// and 5 tags a transaction (2109 too_many_tags), as in FDB 7.3.
	SetTag(tag string) error
	// SetAutoThrottleTag adds a tag that the cluster may throttle on its own.
	SetAutoThrottleTag(tag string) error
	// SetAutomaticIdempotency gives each commit attempt a random 16-byte
	// idempotency ID (FDB 7.3 option automatic_idempotency, 505), so that a
	// commit whose outcome the client lost is resolved before Commit
	// returns: the client waits until the attempt can no longer be in
	// flight, then looks its ID up in the cluster's system keyspace. If it
	// committed, Commit returns nil; if not, Commit returns 1007
	// transaction_too_old, retryable and certainly not committed. So 1021
	// commit_unknown_result no longer reaches the caller, and a retry loop
	// never runs fn again after an attempt that committed.
	//
	// It does not resolve everything: a 1031 timeout or 1025 cancellation
	// that strikes the commit in flight, and 1039 from the multi-version
	// client, still leave the outcome unknown (IsMaybeCommitted), and an ID
	// expired from the cluster before the lookup gives 1022
	// commit_unknown_result_fatal. After a commit resolved this way
	// GetCommittedVersion reports -1 (FDB sets only the versionstamp). FDB
	// 7.3 marks the option "in development and not ready for general use".
	//
	// Like every option of this contract it survives OnError and Reset (FDB
	// itself drops it on both; the FDB adapter sets it again). See
	// docs/design.md, "Idempotent enqueue".
	SetAutomaticIdempotency() error
}

// Database runs transactions.
type Database interface {
	// CreateTransaction returns a new transaction with no retry loop around it.
	CreateTransaction() (Transaction, error)
	// Transact runs fn in a transaction and commits it, retrying on
	// retryable errors as FDB's Transact does: fn may run more than once and
	// must be idempotent where a commit may have succeeded (1021). The
	// transaction is cancelled when ctx is done, and ctx's error returned.
	Transact(ctx context.Context, fn func(Transaction) error) error
	// ReadTransact runs fn in a transaction that is not committed, retrying
	// on retryable errors.
	ReadTransact(ctx context.Context, fn func(ReadTransaction) error) error
}

// MutationType names an atomic operation; the values are FDB's
// FDBMutationType codes.
type MutationType int

// The atomic operations of the contract, with FDB's codes.
const (
	MutationAdd                    MutationType = 2
	MutationBitAnd                 MutationType = 6
	MutationBitOr                  MutationType = 7
	MutationBitXor                 MutationType = 8
	MutationAppendIfFits           MutationType = 9
	MutationMax                    MutationType = 12
	MutationMin                    MutationType = 13
	MutationSetVersionstampedKey   MutationType = 14
	MutationSetVersionstampedValue MutationType = 15
	MutationByteMin                MutationType = 16
	MutationByteMax                MutationType = 17
	MutationCompareAndClear        MutationType = 20
)

// String returns FDB's name for the operation.
func (m MutationType) String() string {
	switch m {
	case MutationAdd:
		return "add"
	case MutationBitAnd:
		return "bit_and"
	case MutationBitOr:
		return "bit_or"
	case MutationBitXor:
		return "bit_xor"
	case MutationAppendIfFits:
		return "append_if_fits"
	case MutationMax:
		return "max"
	case MutationMin:
		return "min"
	case MutationSetVersionstampedKey:
		return "set_versionstamped_key"
	case MutationSetVersionstampedValue:
		return "set_versionstamped_value"
	case MutationByteMin:
		return "byte_min"
	case MutationByteMax:
		return "byte_max"
	case MutationCompareAndClear:
		return "compare_and_clear"
	}
	return "unknown_mutation"
}
