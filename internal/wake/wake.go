// Package wake holds the keys of the sleep/wake protocol between quick and
// worker: an idle worker raises a task type's sleep key (atomic max, Unix
// ms, little-endian) and watches its wake key; an enqueue that writes a job
// vesting at once adds 1 to the wake key when the sleep key says someone
// sleeps. It is internal because no user needs it: the keys are an
// implementation detail both packages must agree on, not a promise.
//
// Keys, under a queue's root subspace R (quick.Queue.Root):
//
//	R ("wake", type)   the counter idle workers watch
//	R ("sleep", type)  until when idle workers sleep (ms)
package wake

import "github.com/quickfdb/quickfdb/tuple"

// WakeKey is the key idle workers of taskType watch.
func WakeKey(root tuple.Subspace, taskType string) []byte {
	return root.Sub("wake").Pack(tuple.Tuple{taskType})
}

// SleepKey holds the latest time until which an idle worker of taskType
// sleeps. Workers raise it and never lower it: a worker that crashed asleep
// stops counting when its sleep would have ended, with no cleanup.
func SleepKey(root tuple.Subspace, taskType string) []byte {
	return root.Sub("sleep").Pack(tuple.Tuple{taskType})
}
