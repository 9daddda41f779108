package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// watchFlags are --watch and --interval, shared by the commands that can
// redraw themselves (lanes, stats).
func watchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh every --interval until interrupted"},
		&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "refresh period for --watch"},
	}
}

// watch runs frame once, or with --watch every --interval until the
// context ends (Ctrl-C), which is then a clean exit. frame writes the
// body of one frame; in table output with --watch a header line goes
// before it, and on a terminal each frame is drawn over the previous one.
func (a *app) watch(c *cli.Context, name string, frame func(w io.Writer) error) error {
	interval := c.Duration("interval")
	watching := c.Bool("watch")
	if watching && interval <= 0 {
		return fmt.Errorf("invalid --interval %v: want a positive duration", interval)
	}
	f, err := outputFormat(c)
	if err != nil {
		return err
	}
	tty := a.d.IsTerminal(a.d.Stdout)
	for n := 0; ; n++ {
		var sb strings.Builder
		if watching && f == formatTable {
			fmt.Fprintf(&sb, "quick %s  %s  %s  (every %v; Ctrl-C stops)\n\n", name, describeSpace(c), fmtTime(a.now()), interval)
		}
		if err := frame(&sb); err != nil {
			if watching && errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		switch {
		case watching && f == formatTable && tty:
			io.WriteString(a.d.Stdout, redraw(sb.String()))
		case watching && f == formatTable && n > 0:
			io.WriteString(a.d.Stdout, "\n"+sb.String())
		default:
			io.WriteString(a.d.Stdout, sb.String())
		}
		if !watching {
			return nil
		}
		select {
		case <-c.Context.Done():
			return nil
		case <-a.d.Clock.After(interval):
		}
	}
}

// redraw turns a frame into what draws it over the previous one on a
// terminal: cursor home, each line followed by erase-to-end-of-line, and
// erase-below at the end. Unlike clearing the screen (ESC [2J), which many
// terminals push into the scrollback, this leaves the scrollback alone.
func redraw(frame string) string {
	var sb strings.Builder
	sb.WriteString("\x1b[H")
	lines := strings.Split(strings.TrimSuffix(frame, "\n"), "\n")
	for _, l := range lines {
		sb.WriteString(l)
		sb.WriteString("\x1b[K\n")
	}
	sb.WriteString("\x1b[J")
	return sb.String()
}
