package main

import (
	"testing"

	"github.com/quickfdb/quickfdb/internal/soak"
)

// TestSoakProfilePicksItsDefaults: -profile and -short choose the config
// the other flags start from, in any order and either flag syntax.
func TestSoakProfilePicksItsDefaults(t *testing.T) {
	for _, c := range []struct {
		args []string
		want soak.Config
	}{
		{nil, soak.Default()},
		{[]string{"-short"}, soak.Short()},
		{[]string{"-profile", "tenants"}, soak.Zones()},
		{[]string{"--profile=tenants", "-short"}, soak.ShortZones()},
		{[]string{"-short", "-profile=plain", "-seed", "3"}, soak.Short()},
	} {
		got, err := baseSoakConfig(c.args)
		if err != nil || got.Duration != c.want.Duration || got.Tenants != c.want.Tenants {
			t.Errorf("%q: %v, %d tenants (%v); want %v, %d", c.args, got.Duration, got.Tenants, err, c.want.Duration, c.want.Tenants)
		}
	}
	if _, err := baseSoakConfig([]string{"-profile", "rings"}); err == nil {
		t.Error("an unknown profile was accepted")
	}
}
