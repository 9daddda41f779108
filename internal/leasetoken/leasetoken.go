// Package leasetoken reads a quick.Lease's token, which quick keeps
// unexported: the token tells one run of a job from another (the worker
// keys its runs by it; the soak checker matches completions to claims),
// but a user never needs it, and an export would be a promise about the
// lease's representation. quick sets Of when it initialises.
package leasetoken

// Of returns the token of a quick.Lease (passed as a value).
var Of func(lease any) uint64
