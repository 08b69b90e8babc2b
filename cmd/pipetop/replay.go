package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/replay"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/settings"
)

// replayFlags is pipetop replay. Without --at, --once and --json show the
// whole run (its end, over window all unless --window says otherwise);
// the interactive replay starts at the beginning and plays.
func replayFlags(fs *flag.FlagSet) runFunc {
	at := fs.Duration("at", 0, "start at this position in the recording (e.g. 1m30s; negative: from the end);\n"+
		"default: --once/--json show the whole run (its end, window all), the interactive replay starts at the beginning")
	once := fs.Bool("once", false, "print the text snapshot (of the whole run, or at --at) and exit")
	asJSON := fs.Bool("json", false, "print the JSON snapshot (of the whole run, or at --at) and exit")
	speed := fs.Int("speed", 1, "play at this speed: 1, 2, 4, ... 64")
	window := fs.String("window", "5s", "summary window: 5s, 30s, 2m or all (--once/--json without --at: all)")
	width := fs.Int("width", 0, "width of the --once text (default: the terminal's, else 100)")
	return func(ctx context.Context, pos []string, stdout, stderr io.Writer) error {
		set := cli.Set(fs)
		whole := (*once || *asJSON) && !set["at"]
		if whole && !set["window"] {
			*window = "all"
		}
		wi, ok := monitor.WindowByLabel(*window)
		if !ok {
			return usageError(fmt.Errorf("--window %q: want 5s, 30s, 2m or all", *window))
		}
		si, ok := replay.SpeedIndex(*speed)
		if !ok {
			return usageError(fmt.Errorf("--speed %d: want one of %v", *speed, replay.Speeds))
		}
		p, err := replay.Load(pos[0])
		if err != nil {
			return err
		}
		if p.Damage != nil {
			fmt.Fprintf(stderr, "pipetop: %v; replaying up to there\n", p.Damage)
		}
		p.SetSpeed(si)
		p.SetPaused(*once || *asJSON)
		p.Place(*at, whole)
		if *once || *asJSON {
			s := p.Snapshot(monitor.Windows[wi])
			if *asJSON {
				return writeJSON(stdout, s)
			}
			return tui.Print(stdout, &s, tui.PrintOptions{Width: *width})
		}
		keys, err := settings.Load("") // as the live view's
		if err != nil {
			return err
		}
		err = tui.Run(ctx, tui.Options{Snapshotter: p.Snapshotter(), Window: wi, Context: ctx, Now: p.Now, Replay: p, Keys: &keys.Keys})
		if errors.Is(err, tui.ErrInterrupted) { // a Ctrl-C closes it, as q does
			return nil
		}
		return err
	}
}
