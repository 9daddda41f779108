//go:build mutant

package mutant

import "os"

var active = os.Getenv(Env)

// On reports whether the named deliberate break is active: the one that
// QUICKFDB_MUTANT names.
func On(name string) bool { return active != "" && active == name }
