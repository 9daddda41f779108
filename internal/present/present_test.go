package present

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond:           "850ms",
		42 * time.Second:                 "42s",
		3*time.Minute + 7*time.Second:    "3m07s",
		2*time.Hour + 5*time.Minute:      "2h05m",
		76 * time.Hour:                   "3d04h",
		-(3*time.Minute + 7*time.Second): "3m07s",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestLaneList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, "none"}, {[]int{5}, "5"}, {[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"}} {
		if got := LaneList(c.in); got != c.want {
			t.Errorf("LaneList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestIsText(t *testing.T) {
	if !IsText([]byte("héllo\n\tworld")) || IsText([]byte{0xff, 'x'}) || IsText([]byte("a\x00b")) {
		t.Error("IsText misjudges")
	}
}
