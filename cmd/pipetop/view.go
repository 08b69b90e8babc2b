package main

import (
	"context"
	"io"

	"github.com/pipetop/pipetop/tui/view"
)

// showView is the view: --once and --json print a snapshot, else the
// full-screen monitor runs (Ctrl-C closes it, as q does).
func showView(ctx context.Context, c config, stdout, _ io.Writer) error {
	return view.Show(ctx, c.Config, stdout)
}
