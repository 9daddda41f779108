package quick

import (
	"context"
	"errors"
	"testing"

	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// TestOpenNilDatabase: a database that failed to open (its error ignored)
// is an error from Open, not a panic.
func TestOpenNilDatabase(t *testing.T) {
	var typed *memkv.DB
	for name, db := range map[string]any{"nil": nil, "typed nil": typed} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: panic %v", name, r)
				}
			}()
			if db == nil {
				_, err = Open(context.Background(), nil, tuple.FromTuple(tuple.Tuple{"q"}), Options{})
			} else {
				_, err = Open(context.Background(), db.(*memkv.DB), tuple.FromTuple(tuple.Tuple{"q"}), Options{})
			}
		}()
		if !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
}
