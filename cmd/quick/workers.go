package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/quickfdb/quickfdb/kv"
	"github.com/quickfdb/quickfdb/quick"
	"github.com/quickfdb/quickfdb/tuple"
)

func (a *app) workersCommand() *cli.Command {
	return &cli.Command{
		Name:  "workers",
		Usage: "workers registered in the lanes registry: host, lanes watched, heartbeat age and count",
		Description: "A one-shot read of the registry cannot judge liveness the way workers do (by seeing a heartbeat\n" +
			"change on their own clock). Without --observe, STATUS compares the wall clock a worker wrote at\n" +
			"its last beat with this machine's clock (--stale), so clock skew shifts it. With --observe D the\n" +
			"registry is read twice, D apart, and a worker whose beat counter moved is \"beating\".",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "type", Aliases: []string{"t"}, Usage: "task type (repeatable); default every type"},
			&cli.DurationFlag{Name: "stale", Value: 5 * time.Second, Usage: "a heartbeat older than this (by wall clock) is stale"},
			&cli.DurationFlag{Name: "observe", Usage: "read twice, this long apart, and report whose heartbeat moved"},
			outputFlag(false),
		},
		Action: a.workers,
	}
}

// registrySpace is where the worker runtime keeps the lanes registry:
// S(1,"w") beside the queue's keys (see quick/keys.go).
func registrySpace(q *quick.Queue) tuple.Subspace { return q.Root().Sub("w") }

// workerRow is one registered worker as read from the registry.
type workerRow struct {
	TaskType  string     `json:"task_type"`
	ID        string     `json:"id"`
	Host      string     `json:"host,omitempty"`
	Lanes     []int      `json:"lanes"`
	NumLanes  int        `json:"num_lanes,omitempty"`
	Replicas  int        `json:"replicas,omitempty"`
	Beats     uint64     `json:"beats"`
	LastBeat  *time.Time `json:"last_beat,omitempty"`
	BeatAgeMs *int64     `json:"beat_age_ms,omitempty"`
	Status    string     `json:"status"`
	InfoError string     `json:"info_error,omitempty"`
}

func (a *app) workers(c *cli.Context) error {
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	q, err := a.queue(c)
	if err != nil {
		return err
	}
	observe := c.Duration("observe")
	if observe < 0 {
		return fmt.Errorf("invalid --observe %v: want a positive duration", observe)
	}
	rows, err := readWorkers(c.Context, q.DB(), registrySpace(q), c.StringSlice("type"))
	if err != nil {
		return err
	}
	if observe > 0 {
		select {
		case <-c.Context.Done():
			return c.Context.Err()
		case <-a.d.Clock.After(observe):
		}
		again, err := readWorkers(c.Context, q.DB(), registrySpace(q), c.StringSlice("type"))
		if err != nil {
			return err
		}
		first := map[string]uint64{}
		for _, r := range rows {
			first[r.TaskType+"\x00"+r.ID] = r.Beats
		}
		for i := range again {
			b, seen := first[again[i].TaskType+"\x00"+again[i].ID]
			switch {
			case !seen:
				again[i].Status = "joined"
			case again[i].Beats != b:
				again[i].Status = "beating"
			default:
				again[i].Status = "silent"
			}
		}
		rows = again
	}
	now := a.now()
	for i := range rows {
		r := &rows[i]
		if r.LastBeat != nil {
			age := now.Sub(*r.LastBeat).Milliseconds()
			r.BeatAgeMs = &age
		}
		if observe == 0 {
			switch {
			case r.LastBeat == nil:
				r.Status = "unknown"
			case now.Sub(*r.LastBeat) > c.Duration("stale"):
				r.Status = "stale"
			default:
				r.Status = "ok"
			}
		}
	}
	if f == formatJSON {
		if rows == nil {
			rows = []workerRow{}
		}
		return writeJSON(a.d.Stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.d.Stdout, "no workers registered")
		return nil
	}
	tw := newTable(a.d.Stdout)
	row(tw, "TASK TYPE", "WORKER", "HOST", "LANES", "LAST BEAT", "BEATS", "STATUS")
	for _, r := range rows {
		lanes := laneList(r.Lanes)
		if r.InfoError != "" {
			lanes = "? (" + r.InfoError + ")"
		} else if r.NumLanes > 0 {
			lanes = fmt.Sprintf("%s of %d", lanes, r.NumLanes)
		}
		beat := "-"
		if r.BeatAgeMs != nil {
			beat = fmtAge(time.Duration(*r.BeatAgeMs)*time.Millisecond) + " ago"
		}
		row(tw, r.TaskType, r.ID, dash(r.Host), lanes, beat, r.Beats, r.Status)
	}
	return tw.Flush()
}

// maxRegistryKeys bounds the registry read: two keys a worker.
const maxRegistryKeys = 20_000

// readWorkers reads the registry's raw keys, S(type, worker, "hb"|"info"),
// and decodes them in the lanes package's formats.
func readWorkers(ctx context.Context, db kv.Database, reg tuple.Subspace, types []string) ([]workerRow, error) {
	var ranges []kv.KeyRange
	if len(types) == 0 {
		b, e := reg.Range()
		ranges = append(ranges, kv.KeyRange{Begin: b, End: e})
	}
	for _, t := range types {
		b, e := reg.Sub(t).Range()
		ranges = append(ranges, kv.KeyRange{Begin: b, End: e})
	}
	var rows []workerRow
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		rows = rows[:0]
		byKey := map[string]int{}
		for _, r := range ranges {
			kvs, err := tr.Snapshot().GetRange(r, kv.RangeOptions{Limit: maxRegistryKeys}).GetSliceWithError()
			if err != nil {
				return err
			}
			for _, p := range kvs {
				t, err := reg.Unpack(p.Key)
				if err != nil || len(t) != 3 {
					continue
				}
				typ, ok1 := t[0].(string)
				id, ok2 := t[1].(string)
				kind, ok3 := t[2].(string)
				if !ok1 || !ok2 || !ok3 {
					continue
				}
				k := typ + "\x00" + id
				i, ok := byKey[k]
				if !ok {
					i = len(rows)
					byKey[k] = i
					rows = append(rows, workerRow{TaskType: typ, ID: id, Lanes: []int{}})
				}
				switch kind {
				case "hb":
					if len(p.Value) >= 8 {
						rows[i].Beats = binary.LittleEndian.Uint64(p.Value)
					}
					if len(p.Value) == 16 {
						w := time.UnixMilli(int64(binary.LittleEndian.Uint64(p.Value[8:]))).UTC()
						rows[i].LastBeat = &w
					}
				case "info":
					in, err := decodeInfo(p.Value)
					if err != nil {
						rows[i].InfoError = err.Error()
						continue
					}
					rows[i].Host, rows[i].NumLanes, rows[i].Replicas, rows[i].Lanes = in.host, in.numLanes, in.replicas, in.lanes
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the worker registry: %w", err)
	}
	slices.SortFunc(rows, func(a, b workerRow) int {
		if c := strings.Compare(a.TaskType, b.TaskType); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return rows, nil
}

type memberInfo struct {
	host               string
	numLanes, replicas int
	lanes              []int
}

var errBadInfo = errors.New("malformed info")

// decodeInfo reads the lanes package's info record (lanes/codec.go, version
// 1): version byte, uvarint host length, host, uvarint lane count, uvarint
// replicas, uvarint number of lanes, then the lanes as uvarint deltas from -1.
func decodeInfo(b []byte) (memberInfo, error) {
	var in memberInfo
	if len(b) == 0 || b[0] != 1 {
		return in, errBadInfo
	}
	b = b[1:]
	next := func() (int, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<20 {
			return 0, false
		}
		b = b[n:]
		return int(v), true
	}
	hl, ok := next()
	if !ok || hl > len(b) {
		return in, errBadInfo
	}
	in.host, b = string(b[:hl]), b[hl:]
	var ok1, ok2, ok3 bool
	in.numLanes, ok1 = next()
	in.replicas, ok2 = next()
	count, ok3 := next()
	if !ok1 || !ok2 || !ok3 || count > len(b) {
		return in, errBadInfo
	}
	in.lanes = make([]int, 0, count)
	prev := -1
	for range count {
		d, ok := next()
		if !ok || d == 0 {
			return in, errBadInfo
		}
		prev += d
		in.lanes = append(in.lanes, prev)
	}
	return in, nil
}

// laneList renders lanes compactly: 0-3,8,10-11.
func laneList(ls []int) string {
	if len(ls) == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < len(ls); {
		j := i
		for j+1 < len(ls) && ls[j+1] == ls[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(ls[i])+"-"+strconv.Itoa(ls[j]))
		} else {
			parts = append(parts, strconv.Itoa(ls[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
