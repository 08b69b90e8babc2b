package main

import (
	"context"
	"io"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor"
)

// maxProbe bounds how long ls waits for each trainer's hello (all in parallel).
const maxProbe = 2 * time.Second

// showList is pipetop ls: it prints the live trainers, the ranks of each
// run together, marking those pipetop cannot talk to.
func showList(ctx context.Context, c config, w, _ io.Writer) error {
	entries, err := monitor.List(ctx, min(ipc.HelloTimeout(), maxProbe))
	switch {
	case err != nil:
		return err
	case c.JSON:
		return writeJSON(w, entries)
	}
	return monitor.WriteList(w, entries, ipc.Dir())
}
