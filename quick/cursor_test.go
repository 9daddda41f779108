package quick_test

import (
	"errors"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
)

// A listing refuses a corrupt cursor, another task type's and another
// listing's, with ErrInvalidCursor; its own pages through.
func TestCursorsAreValidated(t *testing.T) {
	e := newEnv(t, quick.Options{})
	for range 3 {
		e.enqueue(t, quick.NewJob{TaskType: "email"}, quick.NewJob{TaskType: "sms"})
	}
	page, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", Limit: 2})
	if err != nil || len(page.Jobs) != 2 || page.Next == "" {
		t.Fatalf("first page %+v %v", page, err)
	}
	next, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", Limit: 2, After: page.Next})
	if err != nil || len(next.Jobs) != 1 || next.Next != "" || next.Jobs[0].ID == page.Jobs[0].ID || next.Jobs[0].ID == page.Jobs[1].ID {
		t.Fatalf("second page %+v %v", next, err)
	}
	bad := map[string]func() error{
		"another task type": func() error {
			_, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "sms", After: page.Next})
			return err
		},
		"another listing": func() error {
			_, err := e.q.ListDead(e.ctx, quick.ListDeadOptions{TaskType: "email", After: page.Next})
			return err
		},
		"not base64": func() error {
			_, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", After: "%%%"})
			return err
		},
		"truncated": func() error {
			_, err := e.q.List(e.ctx, quick.ListOptions{TaskType: "email", After: page.Next[:4]})
			return err
		},
	}
	for name, f := range bad {
		if err := f(); !errors.Is(err, quick.ErrInvalidCursor) {
			t.Errorf("%s: %v, want ErrInvalidCursor", name, err)
		}
	}
}

func TestDeadCursorPages(t *testing.T) {
	e := newEnv(t, quick.Options{})
	for range 3 {
		e.enqueue(t, quick.NewJob{TaskType: "email", MaxAttempts: 1})
	}
	for _, l := range e.claim(t, "w", 3) {
		if err := e.q.Fail(e.ctx, l, "boom"); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[quick.ID]bool{}
	var after quick.Cursor
	for {
		p, err := e.q.ListDead(e.ctx, quick.ListDeadOptions{TaskType: "email", Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			if seen[j.ID] {
				t.Fatalf("dead letter %s listed twice", j.ID)
			}
			seen[j.ID] = true
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if len(seen) != 3 {
		t.Fatalf("paged through %d dead letters, want 3", len(seen))
	}
}
