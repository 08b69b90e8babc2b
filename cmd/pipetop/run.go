package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/tui"
	"github.com/pipetop/pipetop/tui/collect"
	"github.com/pipetop/pipetop/tui/feed"
	"github.com/pipetop/pipetop/tui/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

// list prints the live trainers.
func list(w io.Writer, asJSON bool) error {
	eps, err := ipc.List()
	if err != nil {
		return err
	}
	if asJSON {
		if eps == nil {
			eps = []ipc.Endpoint{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(eps)
	}
	if len(eps) == 0 {
		fmt.Fprintf(w, "no live trainer in %s\n", ipc.Dir())
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPID\tSOCKET")
	for _, ep := range eps {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", ep.Name, ep.PID, ep.Path)
	}
	return tw.Flush()
}

// target decides what to attach to: the spec's trainer (which must exist),
// the only live one, or none; several live trainers without a spec is
// pick=true.
func target(spec string) (attach string, pick bool, err error) {
	if spec != "" {
		ep, err := ipc.ResolveSpec(spec)()
		if err != nil {
			return "", false, err
		}
		return ep.Path, false, nil
	}
	eps, err := ipc.List()
	if err != nil {
		return "", false, err
	}
	switch len(eps) {
	case 0:
		return "", false, nil
	case 1:
		return eps[0].Name, false, nil
	}
	return "", true, nil
}

// severalTrainers is the error of a command that needs one trainer when
// several are live; cmd is how to name one (attach or export).
func severalTrainers(cmd string) error {
	eps, _ := ipc.List()
	return fmt.Errorf("%d live trainers: choose one with pipetop %s NAME (see pipetop ls)", len(eps), cmd)
}

// newCollector wires the real samplers.
func newCollector(f *feed.Feed, noGPU bool) (*collect.Collector, func()) {
	var g collect.GPUSource
	closeGPU := func() {}
	if !noGPU {
		s := gpu.Open(nvml.New(), gpu.Options{})
		g, closeGPU = s, func() { s.Close() }
	}
	return collect.New(f, host.NewCPUSampler(""), host.NewProcSampler(0, ""), g), closeGPU
}

// snapshotOnce implements --once and --json.
func snapshotOnce(ctx context.Context, c config, stdout io.Writer) error {
	attach, pick, err := target(c.spec)
	if err != nil {
		return err
	}
	if pick {
		return severalTrainers("attach")
	}
	f := feed.New(0)
	defer f.Close()
	if attach != "" || c.spec != "" {
		f.Attach(ctx, attach)
	}
	col, closeGPU := newCollector(f, c.noGPU)
	defer closeGPU()
	if attach != "" {
		awaitLink(ctx, f, c.interval)
	}
	col.Collect(time.Now(), tui.Windows[c.window]) // first reading: rates need two
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(c.interval):
	}
	s := col.Collect(time.Now(), tui.Windows[c.window])
	if c.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return printText(stdout, &s, c)
}

// awaitLink waits until the feed is connected, at most d.
func awaitLink(ctx context.Context, f *feed.Feed, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if f.Link().State == snapshot.LinkConnected {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// printText writes the --once text: colour only on a colour terminal.
func printText(stdout io.Writer, s *snapshot.Snapshot, c config) error {
	out := stdout
	color := false
	width := c.width
	if f, ok := stdout.(*os.File); ok {
		p := colorprofile.Detect(f, os.Environ())
		color = p >= colorprofile.ANSI
		if color {
			out = &colorprofile.Writer{Forward: f, Profile: p}
		}
		if w, _, err := term.GetSize(f.Fd()); err == nil && width == 0 {
			width = w
		}
	}
	if width == 0 {
		width = 100
	}
	m := tui.New(tui.Options{Styles: styles.New(color)})
	m.SetSnapshot(s)
	for _, line := range strings.Split(m.Render(width, -1), "\n") {
		if _, err := fmt.Fprintln(out, strings.TrimRight(line, " ")); err != nil {
			return fmt.Errorf("write snapshot: %w", err)
		}
	}
	return nil
}

// interactive runs the full-screen monitor.
func interactive(ctx context.Context, c config) error {
	attach, pick, err := target(c.spec)
	if err != nil {
		return err
	}
	f := feed.New(0)
	defer f.Close()
	if !pick {
		f.Attach(ctx, attach)
	}
	col, closeGPU := newCollector(f, c.noGPU)
	defer closeGPU()
	p := colorprofile.Detect(os.Stdout, os.Environ())
	m := tui.New(tui.Options{Collector: col, Styles: styles.New(p >= colorprofile.ANSI),
		Interval: c.interval, Window: c.window, Pick: pick, Context: ctx})
	prog := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(10))
	_, err = prog.Run()
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}
