package main

import (
	"testing"

	"github.com/quickfdb/quickfdb/internal/soak"
)

// TestSoakLayoutPicksItsDefaults: -layout and -short choose the config the
// other flags start from, in any order and either flag syntax.
func TestSoakLayoutPicksItsDefaults(t *testing.T) {
	for _, c := range []struct {
		args []string
		want soak.Config
	}{
		{nil, soak.Default()},
		{[]string{"-short"}, soak.Short()},
		{[]string{"-layout", "zones"}, soak.Zones()},
		{[]string{"--layout=zones", "-short"}, soak.ShortZones()},
		{[]string{"-short", "-layout=migrate"}, soak.ShortMigrate()},
		{[]string{"-layout", "migrate", "-seed", "3"}, soak.Migrate()},
	} {
		got := baseSoakConfig(c.args)
		if got.Layout != c.want.Layout && !(c.want.Layout == "" && got.Layout == soak.LayoutLanes) || got.Duration != c.want.Duration || got.Tenants != c.want.Tenants {
			t.Errorf("%q: layout %q, %v, %d tenants; want %q, %v, %d", c.args, got.Layout, got.Duration, got.Tenants, c.want.Layout, c.want.Duration, c.want.Tenants)
		}
	}
	if err := baseSoakConfig([]string{"-layout", "rings"}).Validate(); err == nil {
		t.Error("an unknown layout passed Validate")
	}
}
