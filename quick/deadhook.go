package quick

import (
	"github.com/quickfdb/quickfdb/kv"
)

// DeadLettered describes a job a claim dead-lettered on its own: its
// attempts were all spent by holders that vanished mid-run, so no handler
// is left to act on its end.
type DeadLettered struct {
	ID       ID
	TaskType string
	Payload  []byte
	Reason   string
}

// DeadLetterHook runs inside the transaction of a claim, once for each job
// of its task type the claim dead-letters, after the job's dead-lettering
// is applied in tr (its unique key is free): its writes commit with the
// dead-letter or not at all. Package cron enqueues the next occurrence of
// a schedule here, so a chain does not break when its occurrence's holders
// all vanished.
//
// It must only use tr, may run more than once (the claim retries), and
// must write a bounded, small amount (the claim's own bound then grows by
// that much per dead-lettered job). An error it returns fails the whole
// claim, and the next claim meets the same job again: return only the
// database's errors, and log and drop any other.
type DeadLetterHook func(tr kv.Transaction, job DeadLettered) error

// OnDeadLetter sets the hook run for the jobs of taskType that this queue
// handle's claims dead-letter; nil removes it. Only claims made through this
// handle run it, so set it on the handle every worker claims with (package
// cron does, in Handle).
func (q *Queue) OnDeadLetter(taskType string, h DeadLetterHook) {
	if h == nil {
		q.deadHooks.Delete(taskType)
		return
	}
	q.deadHooks.Store(taskType, h)
}

// hasDeadHook reports whether taskType has a dead-letter hook.
func (q *Queue) hasDeadHook(taskType string) bool {
	_, ok := q.deadHooks.Load(taskType)
	return ok
}

// runDeadHook runs the hook of taskType, if any, for a job the claim in tr
// has just dead-lettered.
func (q *Queue) runDeadHook(tr kv.Transaction, taskType string, id ID, payload []byte, reason string) error {
	h, ok := q.deadHooks.Load(taskType)
	if !ok {
		return nil
	}
	return h.(DeadLetterHook)(tr, DeadLettered{ID: id, TaskType: taskType, Payload: payload, Reason: reason})
}
