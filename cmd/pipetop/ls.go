package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
)

// lsEntry is one line of pipetop ls: a live socket, whether pipetop could
// talk to it, and its run and rank.
type lsEntry = monitor.Listed

// maxProbe bounds how long ls waits for each trainer's hello (all in parallel).
const maxProbe = 2 * time.Second

// showList is pipetop ls: it prints the live trainers, the ranks of each
// run together, marking those pipetop cannot talk to.
func showList(ctx context.Context, c config, w, _ io.Writer) error {
	entries, err := monitor.List(ctx, min(ipc.HelloTimeout(), maxProbe))
	if err != nil {
		return err
	}
	if c.json {
		if entries == nil {
			entries = []lsEntry{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	if len(entries) == 0 {
		fmt.Fprintf(w, "no live trainer in %s\n", ipc.Dir())
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPID\tRUN\tRANK\tSOCKET\tSTATUS")
	for _, e := range entries {
		status, run, rank := "ok", "-", "-"
		if !e.OK {
			status = "✗ cannot attach: " + e.Error
		}
		if e.Run != "" {
			run, rank = e.Run, fmt.Sprintf("%d/%d", *e.Rank, e.WorldSize)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.Name, e.PID, run, rank, e.Path, status)
	}
	return tw.Flush()
}
