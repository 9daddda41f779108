package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqSystem is Asynq on Redis with its default server settings.
type asynqSystem struct {
	opt    asynq.RedisClientOpt
	rdb    *redis.Client
	client *asynq.Client
	srv    *asynq.Server
	pid    int
}

func newAsynq(ctx context.Context, addr string) (*asynqSystem, error) {
	opt := asynq.RedisClientOpt{Addr: addr}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	pid, err := redisPID(info)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	if _, err := parentPID(pid); err != nil { // it must run on this machine
		rdb.Close()
		return nil, err
	}
	return &asynqSystem{opt: opt, rdb: rdb, client: asynq.NewClient(opt), pid: pid}, nil
}

// redisPID reads process_id from INFO server.
func redisPID(info string) (int, error) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("redis INFO server has no process_id")
}

func (s *asynqSystem) Name() string      { return "Asynq, Redis" }
func (s *asynqSystem) ServerPIDs() []int { return []int{s.pid} }

// Reset empties the benchmark's private Redis database.
func (s *asynqSystem) Reset(ctx context.Context) error {
	return s.rdb.FlushDB(ctx).Err()
}

func (s *asynqSystem) task(stamp int64) *asynq.Task {
	return asynq.NewTask(peerArgs{}.Kind(), encodeArgs(stamp))
}

// EnqueueBatch: Asynq has no bulk enqueue, so a batch is its jobs enqueued
// by concurrent Enqueue calls, all of which must return before the next
// batch.
func (s *asynqSystem) EnqueueBatch(ctx context.Context, stamps []int64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(stamps))
	for i, t := range stamps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.client.EnqueueContext(ctx, s.task(t))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *asynqSystem) Enqueue(ctx context.Context, stamp int64) error {
	_, err := s.client.EnqueueContext(ctx, s.task(stamp))
	return err
}

func (s *asynqSystem) Start(ctx context.Context, slots int, onStart startFunc) error {
	srv := asynq.NewServer(s.opt, asynq.Config{Concurrency: slots, LogLevel: asynq.WarnLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc(peerArgs{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		stamp, err := decodeArgs(t.Payload())
		if err != nil {
			return err
		}
		onStart(stamp, time.Now().UnixNano())
		return nil
	})
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("asynq start: %w", err)
	}
	s.srv = srv
	return nil
}

// Stop waits for the handlers and Asynq's own shutdown (up to its
// ShutdownTimeout, 8 s by default).
func (s *asynqSystem) Stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	s.srv.Shutdown()
	s.srv = nil
	return nil
}

func (s *asynqSystem) Close() error {
	return errors.Join(s.client.Close(), s.rdb.Close())
}
