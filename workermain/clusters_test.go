package workermain

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/worker"
)

// RunMain with -clusters serves several databases from one process: setup
// runs on each cluster's worker, the jobs of both run, and the stats are
// logged per cluster.
func TestRunMainClusters(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 3
	var mu sync.Mutex
	ran := map[string]int{}
	var stderr bytes.Buffer
	err := RunMain(func(w *worker.Worker) error {
		cluster := w.Cluster()
		if err := worker.RegisterRaw(w, "main", func(ctx context.Context, j *worker.RawJob) error {
			mu.Lock()
			defer mu.Unlock()
			ran[cluster]++
			if ran["east"] == n && ran["west"] == n {
				cancel()
			}
			return nil
		}, worker.HandlerOptions{}); err != nil {
			return err
		}
		jobs := make([]quick.NewJob, n)
		for i := range jobs {
			jobs[i] = quick.NewJob{TaskType: "main"}
		}
		_, err := w.Queue().Enqueue(ctx, jobs...)
		return err
	}, MainOptions{
		AllowEmbedded: true,
		Args:          []string{"-embedded", "-clusters", "east,west", "-concurrency", "2"},
		Context:       ctx,
		Stderr:        &stderr,
	})
	if err != nil {
		t.Fatalf("RunMain: %v\n%s", err, stderr.String())
	}
	if ran["east"] != n || ran["west"] != n {
		t.Fatalf("jobs run per cluster %v, want %d each", ran, n)
	}
	for _, c := range []string{"cluster=east", "cluster=west"} {
		if !strings.Contains(stderr.String(), c) {
			t.Fatalf("no %s in the log:\n%s", c, stderr.String())
		}
	}
}

func TestOpenClustersRejectsBadLists(t *testing.T) {
	for _, c := range []Flags{
		{Clusters: "east,east", Embedded: true, AllowEmbedded: true, Subspace: "q"},
		{Clusters: "east=a.cluster", Embedded: true, AllowEmbedded: true, Subspace: "q"},
		{Clusters: "east", Subspace: "q"},
		{Clusters: "east", Embedded: true, Subspace: "q"},
		{Clusters: "east=a", ClusterFile: "b", Subspace: "q"},
	} {
		if _, _, err := c.OpenClusters(); !errors.Is(err, ErrFlags) {
			t.Fatalf("%+v: err %v, want ErrFlags", c, err)
		}
	}
}
