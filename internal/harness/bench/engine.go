package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/kv/fdbkv"
	"github.com/quickfdb/quickfdb/kv/memkv"
	"github.com/quickfdb/quickfdb/tuple"
)

// Engine opens a database for one run.
type Engine struct {
	// Name describes the engine in reports.
	Name string
	// open returns a database and a fresh subspace of it, and a function
	// that clears the subspace and releases the database.
	open func() (kv.Database, tuple.Subspace, func(), error)
}

// MemEngine is memkv with FDB's published latencies injected into every
// round trip (memkv.FDBLatency: read version 0.3–1 ms, read 0.1–1 ms, commit
// 1.5–2.5 ms, the figures of FoundationDB's performance documentation,
// "Latency", for a cluster at 75% load). Each run gets a fresh engine, so
// runs do not inherit each other's leftovers.
func MemEngine(seed int64) Engine {
	return Engine{
		Name: "memkv+FDBLatency (GRV 0.3-1ms, read 0.1-1ms, commit 1.5-2.5ms injected)",
		open: func() (kv.Database, tuple.Subspace, func(), error) {
			db := memkv.Open(memkv.Options{Latency: memkv.FDBLatency(), Seed: seed})
			return db, freshSpace(), func() { _ = db.Close() }, nil
		},
	}
}

// FDBEngine runs on a real cluster through kv/fdbkv (build with -tags fdb).
// Each run uses a fresh subspace, cleared afterwards.
func FDBEngine(clusterFile string) (Engine, error) {
	db, err := fdbkv.Open(clusterFile)
	if err != nil {
		if !fdbkv.Built {
			return Engine{}, fmt.Errorf("%w (this quickbench was built without FoundationDB support: rebuild with `go build -tags fdb ./cmd/quickbench`, which needs libfdb_c 7.3)", err)
		}
		return Engine{}, err
	}
	return Engine{
		Name: "FoundationDB cluster " + clusterFile,
		open: func() (kv.Database, tuple.Subspace, func(), error) {
			sp := freshSpace()
			return db, sp, func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = db.Transact(ctx, func(tr kv.Transaction) error {
					tr.ClearRange(kv.PrefixRange(sp.Bytes()))
					return nil
				})
			}, nil
		},
	}, nil
}

func freshSpace() tuple.Subspace {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return tuple.FromTuple(tuple.Tuple{"quickbench", hex.EncodeToString(b[:])})
}
