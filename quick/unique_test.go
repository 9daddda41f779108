package quick_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

func TestUniqueHolder(t *testing.T) {
	e := newEnv(t, quick.Options{MaxAttempts: 1})
	res := e.enqueue(t, quick.NewJob{TaskType: "email", UniqueKey: "user-7"})
	id, err := e.q.UniqueHolder(e.ctx, "email", "user-7")
	if err != nil || id != res[0].ID {
		t.Fatalf("UniqueHolder = %v, %v; want %v", id, err, res[0].ID)
	}
	if _, err := e.q.UniqueHolder(e.ctx, "email", "user-8"); !errors.Is(err, quick.ErrNotFound) {
		t.Fatalf("free key: err %v, want ErrNotFound", err)
	}
	if _, err := e.q.UniqueHolder(e.ctx, "webhook", "user-7"); !errors.Is(err, quick.ErrNotFound) {
		t.Fatalf("other type: err %v, want ErrNotFound", err)
	}
	// A dead-lettered job gives its key up.
	ls := e.claim(t, "w", 1)
	if err := e.q.Fail(e.ctx, ls[0], "boom"); err != nil {
		t.Fatalf("Fail = %v", err)
	}
	if info, _ := e.q.Get(e.ctx, ls[0].ID); info.State != quick.StateDead {
		t.Fatalf("failed job %+v, want dead", info)
	}
	if _, err := e.q.UniqueHolder(e.ctx, "email", "user-7"); !errors.Is(err, quick.ErrNotFound) {
		t.Fatalf("dead job's key: err %v, want ErrNotFound", err)
	}
}

func TestUniqueHolderBadInput(t *testing.T) {
	e := newEnv(t, quick.Options{})
	for _, c := range []struct{ typ, key string }{
		{"", "k"}, {"email", ""}, {"email", strings.Repeat("k", quick.MaxUniqueKeyLen+1)},
	} {
		if _, err := e.q.UniqueHolder(e.ctx, c.typ, c.key); err == nil || errors.Is(err, quick.ErrNotFound) {
			t.Errorf("UniqueHolder(%q, %d bytes): err %v, want a validation error", c.typ, len(c.key), err)
		}
	}
}
