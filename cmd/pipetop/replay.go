package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/charmbracelet/colorprofile"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/replay"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/settings"
	"github.com/pipetop/pipetop/tui/styles"
)

// wholeRun is what replay --once/--json show without --at.
const wholeRun = "the whole run (its end, all steps; --at D: one instant)"

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
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		whole := (*once || *asJSON) && !set["at"]
		if whole && !set["window"] {
			*window = "all"
		}
		wi, ok := monitor.WindowByLabel(*window)
		if !ok {
			return usageError{fmt.Errorf("--window %q: want 5s, 30s, 2m or all", *window)}
		}
		si, err := speedIndex(*speed)
		if err != nil {
			return err
		}
		p, err := replay.Load(pos[0])
		if err != nil {
			return err
		}
		if p.Damage != nil {
			fmt.Fprintf(stderr, "pipetop: %v; replaying up to there\n", p.Damage)
		}
		p.SetSpeed(si)
		start := p.Start().Add(*at)
		if *at < 0 || whole {
			start = p.End().Add(*at)
		}
		if whole {
			p.SetView(wholeRun)
		}
		if *once || *asJSON {
			p.SetPaused(true)
			p.SeekTo(start)
			s := p.Snapshot(monitor.Windows[wi])
			if *asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return printText(stdout, &s, config{width: *width})
		}
		p.SeekTo(start)
		sets, err := settings.Load(settings.DefaultPath(), true) // the keys, as the live view's
		if err != nil {
			return err
		}
		prof := colorprofile.Detect(os.Stdout, os.Environ())
		root := tui.New(tui.Options{Snapshotter: p.Snapshotter(), Styles: styles.New(prof >= colorprofile.ANSI),
			Window: wi, Context: ctx, Now: p.Now, Replay: p, Keys: &sets.Keys})
		return closed(fullScreen(ctx, root, prof))
	}
}

// speedIndex is the index of speed in replay.Speeds.
func speedIndex(speed int) (int, error) {
	for i, s := range replay.Speeds {
		if float64(speed) == s {
			return i, nil
		}
	}
	return 0, usageError{fmt.Errorf("--speed %d: want one of %v", speed, replay.Speeds)}
}
