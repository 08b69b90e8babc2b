package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/pipetop/pipetop/export"
	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/remote"
	"github.com/pipetop/pipetop/tui/settings"
	"github.com/pipetop/pipetop/tui/view"
)

// config is the parsed command line of the view and of attach, ls and
// export, which share its flags: what the view shows (view.Config), and
// the rest.
type config struct {
	view.Config
	cmd     string // "", "attach", "ls" or "export"
	listen  string // export: the HTTP address
	profile string
	// The flags read by finish: --window's label and --config's file.
	windowLabel, cfgPath string
}

// showFunc runs the view, ls or export on its parsed command line.
type showFunc func(ctx context.Context, c config, stdout, stderr io.Writer) error

// viewFlags is the flags column of the view, attach (cmd), ls and
// export: the view's flags, and show run on them (with --cpuprofile).
func viewFlags(cmd string, show showFunc) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		c := &config{cmd: cmd}
		c.declare(fs)
		return func(ctx context.Context, pos []string, stdout, stderr io.Writer) error {
			if err := c.finish(fs, pos); err != nil {
				return err
			}
			if c.profile != "" {
				stop, err := cli.StartProfile(c.profile)
				if err != nil {
					return err
				}
				defer stop()
			}
			return show(ctx, *c, stdout, stderr)
		}
	}
}

// parse parses a command line of the view, attach, ls or export (args,
// the name first) as run does, without running it.
func parse(args []string, stderr io.Writer) (config, error) {
	p := program()
	cmd, args := p.Lookup(args)
	fs := p.FlagSet(cmd, stderr)
	c := config{cmd: cmd.Name}
	c.declare(fs)
	pos, err := p.Parse(cmd, fs, args)
	if err == nil {
		err = c.finish(fs, pos)
	}
	return c, err
}

// declare declares the view's flags on fs.
func (c *config) declare(fs *flag.FlagSet) {
	fs.BoolVar(&c.Once, "once", false, "print one text snapshot after collecting for --interval, then exit")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON snapshot (with ls: the list as JSON), then exit")
	fs.DurationVar(&c.Interval, "interval", time.Second, "refresh interval (and collection time of --once/--json; export: 5s)")
	fs.StringVar(&c.windowLabel, "window", "5s", "summary window: 5s, 30s, 2m or all (export: 30s)")
	fs.StringVar(&c.listen, "listen", export.DefaultListen, "export: serve /metrics at this `host:port`")
	fs.IntVar(&c.Width, "width", 0, "width of the --once text (default: the terminal's, else 100)")
	fs.BoolVar(&c.NoGPU, "no-gpu", false, "do not load NVML")
	fs.BoolVar(&c.ReadOnly, "readonly", false, "never send signals from the process table (F9 is refused)")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a Go CPU profile of this run to `file`")
	fs.StringVar(&c.Prometheus, "prometheus", "", "read the run from the Prometheus server at `URL` (every host's pipetop export) instead of local sockets: pipetop --prometheus URL [RUN]")
	fs.IntVar(&c.Rank, "rank", -1, "with --prometheus: the rank whose flame bar, trainer and host are shown; -1 is the lowest")
	fs.StringVar(&c.cfgPath, "config", "", "settings `file` (default: $XDG_CONFIG_HOME or ~/.config, /pipetop/config.toml, when it exists)")
}

// finish applies the settings file and checks the command line, pos its
// arguments.
func (c *config) finish(fs *flag.FlagSet, pos []string) error {
	set := cli.Set(fs)
	if err := c.settings(c.cfgPath, set); err != nil {
		return err
	}
	if err := c.check(pos, set); err != nil {
		return usageError(err)
	}
	return nil
}

// settings applies the settings file to the view (not to export or ls);
// flags given on the command line win.
func (c *config) settings(path string, set map[string]bool) error {
	if c.cmd == "export" || c.cmd == "ls" {
		if path != "" {
			return usageError(fmt.Errorf("--config is not for pipetop %s", c.cmd))
		}
		return nil
	}
	s, err := settings.Load(path)
	if err != nil {
		return err
	}
	if s.Refresh > 0 && !set["interval"] {
		c.Interval = s.Refresh
	}
	if s.Window != "" && !set["window"] {
		c.windowLabel = s.Window
	}
	c.Settings = s
	if s.Prometheus != "" && !set["prometheus"] && c.cmd == "" {
		c.Prometheus = s.Prometheus
	}
	return nil
}

// check validates the command line; set holds the flags given.
func (c *config) check(pos []string, set map[string]bool) error {
	if c.Prometheus != "" && c.cmd != "" {
		return fmt.Errorf("--prometheus is for the view (pipetop --prometheus URL [RUN]), not for pipetop %s", c.cmd)
	}
	if _, err := remote.NewClient(c.Prometheus); c.Prometheus != "" && err != nil {
		return err
	}
	switch {
	case c.cmd == "attach" && len(pos) != 1:
		return errors.New("attach needs one trainer: a socket path, a pid or a name (see pipetop ls)")
	case c.cmd == "attach":
		c.Spec = pos[0]
	case c.cmd == "export" && len(pos) > 1:
		return fmt.Errorf("export takes at most one trainer, got %d: %s", len(pos), strings.Join(pos, " "))
	case c.cmd == "export" && len(pos) == 1:
		c.Spec = pos[0]
	case c.Prometheus != "" && len(pos) > 1:
		return fmt.Errorf("--prometheus reads one run, got %d: %s", len(pos), strings.Join(pos, " "))
	case c.Prometheus != "" && len(pos) == 1:
		c.Spec = pos[0]
	case c.Prometheus == "" && set["rank"]:
		return errors.New("--rank is for --prometheus (a local view shows the lowest rank)")
	case len(pos) > 0:
		return fmt.Errorf("unexpected argument %q (did you mean pipetop attach %s?)", pos[0], pos[0])
	}
	window := c.windowLabel
	if c.cmd == "export" {
		if err := c.checkExport(set); err != nil {
			return err
		}
		if !set["window"] {
			window = export.DefaultWindow
		}
	} else if set["listen"] {
		return errors.New("--listen is for pipetop export")
	}
	if c.Interval < 50*time.Millisecond {
		return fmt.Errorf("--interval %v: want at least 50ms", c.Interval)
	}
	w, ok := monitor.WindowByLabel(window)
	if !ok {
		return fmt.Errorf("--window %q: want 5s, 30s, 2m or all", window)
	}
	c.Window = w
	if c.Once && c.JSON {
		return errors.New("--once and --json: pick one")
	}
	if c.Width < 0 {
		return fmt.Errorf("--width %d: want a positive number", c.Width)
	}
	return nil
}

// checkExport applies the export defaults and rejects the flags that only
// make sense on a terminal.
func (c *config) checkExport(set map[string]bool) error {
	for _, name := range []string{"once", "json", "width"} {
		if set[name] {
			return fmt.Errorf("--%s is not for pipetop export", name)
		}
	}
	if !set["interval"] {
		c.Interval = export.DefaultInterval
	}
	if _, _, err := net.SplitHostPort(c.listen); err != nil {
		return fmt.Errorf("--listen %q: want host:port, e.g. %s (or :9464 for every interface): %v", c.listen, export.DefaultListen, err)
	}
	return nil
}
