package main

import (
	"fmt"
	"strings"

	"github.com/quickfdb/quickfdb/tuple"
)

// parseSubspace reads the --subspace syntax (tuple.ParsePrefix).
func parseSubspace(s string) (tuple.Tuple, error) { return tuple.ParsePrefix(s) }

// defaultSubspace is the tuple prefix a queue lives under when neither
// --subspace nor --directory is given.
const defaultSubspace = "quick"

// parseDirectory splits a --directory path a/b/c into its parts.
func parseDirectory(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, "/") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		out = append(out, part)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("invalid directory %q: no path elements (want e.g. app/jobs)", s)
	}
	return out, nil
}
