package tuple

import (
	"bytes"
	"encoding/gob"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// officialModule is the official Go binding's module path. Its source ships
// tuples.golden, bytes produced by the official Pack for the cases rebuilt
// below; matching them checks this package against the real thing without
// cgo. The test skips when the module is not in the local module cache.
const officialModule = "github.com/apple/foundationdb/bindings/go"

func officialGoldenPath(t *testing.T) string {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Skipf("no go.mod: %v", err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(officialModule) + `\s+(\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Skipf("%s not required by go.mod", officialModule)
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			t.Skipf("go env GOMODCACHE: %v", err)
		}
		cache = strings.TrimSpace(string(out))
	}
	return filepath.Join(cache, officialModule+"@"+string(m[1]), "src/fdb/tuple/testdata/tuples.golden")
}

// officialGoldenCases rebuilds the official tuple_test.go cases. Their
// random values come from math/rand seeded with 1, drawn in the same order.
func officialGoldenCases() map[string]Tuple {
	rng := rand.New(rand.NewSource(1))
	many := func(gen func() any, n int) Tuple {
		t := make(Tuple, n)
		for i := range t {
			t[i] = gen()
		}
		return t
	}
	str := func() any { return "namespace" }
	strNil := func() any { return "nam\x00es\xFFpace" }
	byts := func() any { return []byte("namespace") }
	bytsNil := func() any { return []byte{0xFF, 0x00, 0xFF} }
	integer := func() any { return rng.Int63() }
	float := func() any { return float32(rng.NormFloat64()) }
	double := func() any { return rng.NormFloat64() }

	// Draw in the order the official composite literal evaluates.
	integers := many(integer, 20)
	floats := many(float, 20)
	doubles := many(double, 20)
	nested := Tuple{testUUID, many(integer, 4), nil, many(byts, 4), nil, many(double, 4), nil}
	return map[string]Tuple{
		"Simple":         {testUUID, "foobarbaz", 1234, nil},
		"Namespaces":     {testUUID, "github", "com", "apple", "foundationdb", "tree"},
		"ManyStrings":    many(str, 8),
		"ManyStringsNil": many(strNil, 8),
		"ManyBytes":      many(byts, 20),
		"ManyBytesNil":   many(bytsNil, 20),
		"LargeBytes":     {testUUID, bytes.Repeat([]byte("abcd"), 20)},
		"LargeBytesNil":  {testUUID, bytes.Repeat([]byte{0xFF, 0x0, 0xFF}, 20)},
		"Integers":       integers,
		"Floats":         floats,
		"Doubles":        doubles,
		"UUIDs":          {testUUID, true, testUUID, false, testUUID, true, testUUID, false, testUUID, true},
		"NilCases":       {"\x00", "\x00\xFF", "\x00\x00\x00", "\xFF\x00", ""},
		"Nested":         nested,
	}
}

func TestOfficialGolden(t *testing.T) {
	f, err := os.Open(officialGoldenPath(t))
	if err != nil {
		t.Skipf("official golden file unavailable: %v", err)
	}
	defer f.Close()
	var golden map[string][]byte
	if err := gob.NewDecoder(f).Decode(&golden); err != nil {
		t.Fatalf("decode golden file: %v", err)
	}
	cases := officialGoldenCases()
	if len(golden) != len(cases) {
		t.Errorf("golden file has %d cases, rebuilt %d", len(golden), len(cases))
	}
	for name, tup := range cases {
		want, ok := golden[name]
		if !ok {
			t.Errorf("%s: not in golden file", name)
			continue
		}
		if got := tup.Pack(); !bytes.Equal(got, want) {
			t.Errorf("%s: Pack\n got % x\nwant % x", name, got, want)
		}
		dec, err := Unpack(want)
		if err != nil || !identical(dec, normalized(tup)) {
			t.Errorf("%s: Unpack = %v, %v", name, dec, err)
		}
	}
}
