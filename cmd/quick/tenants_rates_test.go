package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

// quick tenants shows a limited tenant's running jobs against its
// concurrency limit, and each tenant's start rate as the workers counted it
// (S (1, "tr", minute, type, itemSpace), written here as a worker would).
func TestTenantsRunningAndStartRate(t *testing.T) {
	h := newHarness(t)
	q := h.queue()
	ctx := context.Background()
	var jobs []quick.NewJob
	for range 6 {
		jobs = append(jobs, quick.NewJob{TaskType: "email", ItemSpace: "acme"})
	}
	if _, err := q.Enqueue(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	if err := q.SetTenantLimits(ctx, "email", "acme", quick.Limits{Concurrency: 5, Rate: 10}); err != nil {
		t.Fatal(err)
	}
	h.claim(q, quick.ClaimOptions{TaskType: "email", Holder: "w", Max: 2, Lease: time.Minute})
	minute := h.clk.Now().Unix()/60 - 1
	if err := q.DB().Transact(ctx, func(tr kv.Transaction) error {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], 90)
		tr.Set(q.Root().Sub("tr").Pack(tuple.Tuple{minute, "email", "acme"}), b[:])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out := h.ok("tenants")
	if !strings.Contains(out, "RUNNING/LIMIT") || !strings.Contains(out, "2/5") || !strings.Contains(out, "/10") {
		t.Fatalf("quick tenants:\n%s", out)
	}
	var got struct {
		Types []typeDepth `json:"types"`
	}
	if err := json.Unmarshal([]byte(h.ok("tenants", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	acme := got.Types[0].Tenants[0]
	if acme.ItemSpace != "acme" || acme.Running != 2 || acme.ConcurrencyLimit != 5 || acme.RateLimit != 10 ||
		acme.StartsPerSecond == nil || *acme.StartsPerSecond <= 0.7 || *acme.StartsPerSecond > 1.5 {
		t.Fatalf("acme: %+v (starts %v)", acme, acme.StartsPerSecond)
	}
}
