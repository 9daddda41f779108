package memkv

import (
	"slices"
	"time"
)

// FDB 7.3's limits on transaction tags (fdbclient/ClientKnobs.cpp:
// MAX_TRANSACTION_TAG_LENGTH, MAX_TAGS_PER_TRANSACTION).
const (
	maxTagLength = 255
	maxTags      = 5
)

// txnOptions sets a transaction's options. Tags and priority are recorded
// but change nothing: the engine has no ratekeeper to throttle with.
type txnOptions struct{ t *txn }

// SetTimeout bounds the transaction, retries included, measured from its
// creation or last Reset on the engine clock; operations then fail with 1031.
// Zero removes the bound; setting it may fail the transaction at once.
func (o txnOptions) SetTimeout(ms int64) error {
	if ms < 0 {
		return errInvalidOption
	}
	t := o.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timeout = time.Duration(ms) * time.Millisecond
	t.armTimeoutLocked()
	return nil
}

// SetRetryLimit bounds the retries OnError allows; -1 means no limit.
func (o txnOptions) SetRetryLimit(limit int64) error {
	if limit < -1 {
		return errInvalidOption
	}
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	o.t.retryLimit = limit
	return nil
}

// SetPriorityBatch records batch priority.
func (o txnOptions) SetPriorityBatch() error {
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	o.t.batch = true
	return nil
}

// SetTag adds a throttling tag.
func (o txnOptions) SetTag(tag string) error { return o.addTag(tag) }

// SetAutoThrottleTag adds a tag the cluster may throttle on its own; it
// shares SetTag's limits.
func (o txnOptions) SetAutoThrottleTag(tag string) error { return o.addTag(tag) }

// addTag follows TagSet::addTag: too long fails with 2110, and a sixth tag
// with 2109 (checked before duplicates are dropped).
func (o txnOptions) addTag(tag string) error {
	if len(tag) > maxTagLength {
		return errTagTooLong
	}
	t := o.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.tags) >= maxTags {
		return errTooManyTags
	}
	if !slices.Contains(t.tags, tag) {
		t.tags = append(t.tags, tag)
	}
	return nil
}

// SetAutomaticIdempotency records FDB 7.3's automatic_idempotency. It
// changes nothing in the engine, and that is exact: FDB resolves only a
// commit_unknown_result (1021) with it, and the engine never reports one.
// The unknown outcomes the engine does produce, a 1031 timeout or 1025
// cancellation striking a commit in flight (injected latency), FDB leaves
// unknown with the option too: the RYW layer races the commit against the
// transaction's reset promise, which the timeout or Cancel fails
// (fdbclient/ReadYourWrites.actor.cpp:1405, timebomb at :1567), so they
// return before the idempotency lookup ends. kv.WithFaults, which injects
// 1021, resolves it as FDB's client does when the option is set.
func (o txnOptions) SetAutomaticIdempotency() error {
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	o.t.idempotent = true
	return nil
}
