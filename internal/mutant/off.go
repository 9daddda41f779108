//go:build !mutant

package mutant

// On reports whether the named deliberate break is active: never, in an
// ordinary build.
func On(name string) bool { return false }
