//go:build fdb

package fdbkv_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quickfdb/quickfdb/fdbtest"
	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/tuple"
)

// BenchmarkClientCPUPerTransaction measures what one transaction costs the
// client process, FoundationDB's network thread included: a read of one
// key, a set of it and a commit (a read version, a read and a commit round
// trip), run one at a time and from 32 goroutines. It reports the
// process's CPU per transaction (user and system, getrusage) and the
// transactions per second; the server's CPU is not counted. docs/fdb.md,
// "What a transaction costs the client", breaks the CPU down. Run it with
//
//	go test -tags fdb -run '^$' -bench ClientCPUPerTransaction -benchtime 2000x ./kv/fdbkv/
func BenchmarkClientCPUPerTransaction(b *testing.B) {
	for _, c := range []struct {
		name string
		par  int
	}{{"sequential", 1}, {"32-goroutines", 32}} {
		b.Run(c.name, func(b *testing.B) {
			db, space := fdbtest.Open(b)
			ctx := context.Background()
			cpu0, t0 := processCPU(b), time.Now()
			b.ResetTimer()
			var wg sync.WaitGroup
			for p := range c.par {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := p; i < b.N; i += c.par {
						k := space.Pack(tuple.Tuple{int64(i)})
						if err := db.Transact(ctx, func(tr kv.Transaction) error {
							if _, err := tr.Get(k).Get(); err != nil {
								return err
							}
							tr.Set(k, []byte("v"))
							return nil
						}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			el, cpu := time.Since(t0), processCPU(b)-cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/tx")
			b.ReportMetric(float64(b.N)/el.Seconds(), "tx/s")
		})
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
