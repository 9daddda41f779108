package chaos

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/quick"
)

func TestEventRoundTrip(t *testing.T) {
	id := quick.NewID(time.Unix(1764662400, 0))
	for _, e := range []Event{
		{Kind: EvStart, Worker: "w1", Job: id, Token: 1 << 63, Attempt: 3, Short: true, At: 1764662400000000000},
		{Kind: EvEnd, Worker: "w2", Job: id, Token: 5, Attempt: 1, At: 1, Note: "lease-lost"},
		{Kind: EvReady, Worker: "w3"},
		{Kind: EvErrs, Worker: "w4", Note: "1007:2,1021:1"},
	} {
		got, err := ParseEvent(e.String())
		if err != nil || got != e {
			t.Errorf("%q: got %+v, %v; want %+v", e.String(), got, err, e)
		}
	}
	for _, bad := range []string{"", "CH start w1", "XX start w1 " + id.String() + " 1 1 0 1 -", "CH nope w1 " + id.String() + " 1 1 0 1 -",
		"CH start w1 nothex 1 1 0 1 -", "CH start w1 " + id.String() + " -1 1 0 1 -", "CH start w1 " + id.String() + " 1 1 2 1 -"} {
		if _, err := ParseEvent(bad); !errors.Is(err, ErrNotEvent) {
			t.Errorf("%q: %v, want ErrNotEvent", bad, err)
		}
	}
}

func TestCodesRoundTrip(t *testing.T) {
	m := map[int]int64{1007: 3, 1021: 1, 1037: 12}
	got, err := ParseCodes(FormatCodes(m))
	if err != nil || !maps.Equal(got, m) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"1007", "1007:x", "a:1", "1007:-1", "1007:1,"} {
		if _, err := ParseCodes(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// Any line parses or fails with ErrNotEvent, and a parsed one prints back
// to a line that parses to the same event.
func FuzzParseEvent(f *testing.F) {
	f.Add("CH start w1 " + quick.NewID(time.Unix(1764662400, 0)).String() + " 7 1 0 123 -")
	f.Add("CH end w1 " + quick.NewID(time.Unix(1764662400, 0)).String() + " 7 2 1 123 fdb-1021")
	f.Add("CH errs w1 00000000-0000-0000-0000-000000000000 0 0 0 0 1007:1")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseEvent(line)
		if err != nil {
			if !errors.Is(err, ErrNotEvent) {
				t.Fatalf("error %v is not ErrNotEvent", err)
			}
			return
		}
		again, err := ParseEvent(e.String())
		if err != nil || again != e {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", line, e, e.String(), again, err)
		}
	})
}

func FuzzParseCodes(f *testing.F) {
	f.Add("1007:1,1021:3")
	f.Add("")
	f.Add("x:y")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseCodes(s)
		if err != nil {
			return
		}
		again, err := ParseCodes(FormatCodes(m))
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("%q -> %v -> %v, %v", s, m, again, err)
		}
	})
}
