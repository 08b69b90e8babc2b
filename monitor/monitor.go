// Package monitor is pipetop's headless viewer: the link to a trainer
// (package feed), the registered host sources (package source and
// sources/...), the collector that turns both into one snapshot per refresh
// (package snapshot), and the summary windows. The terminal view, --once,
// --json and the Prometheus exporter all read the same snapshot; nothing
// here draws.
package monitor

import (
	"context"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Windows are the summary windows a viewer can choose from.
var Windows = []snapshot.Window{{Label: "5s", Seconds: 5}, {Label: "30s", Seconds: 30}, {Label: "2m", Seconds: 120}, {Label: "all", Seconds: 0}}

// WindowByLabel returns the index in Windows of a label such as "30s".
func WindowByLabel(label string) (int, bool) {
	for i, w := range Windows {
		if w.Label == label {
			return i, true
		}
	}
	return 0, false
}

// Options configure Open.
type Options struct {
	// NoGPU leaves NVML unloaded.
	NoGPU bool
	// Sources replaces the registered sources (tests pass fakes); nil means
	// Registered(NoGPU).
	Sources []source.Source
	// NoWatch does not wait for a trainer to appear when none is live and
	// no spec was given (one-shot snapshots).
	NoWatch bool
}

// Monitor is one viewer: a feed attached to a trainer and the collector
// over it and the sources.
type Monitor struct {
	Feed      *feed.Feed
	Collector *Collector
	// Pick is set when several trainers are live and no spec chose one:
	// nothing is attached; the caller lets the user pick, or refuses.
	Pick bool

	attached bool // the feed is watching for a trainer
}

// Open resolves spec (a socket path, pid or name; empty for the only live
// trainer), starts watching it until ctx ends, and wires the sources. A
// spec that names no live trainer is an error.
func Open(ctx context.Context, spec string, o Options) (*Monitor, error) {
	attach, pick, err := target(spec)
	if err != nil {
		return nil, err
	}
	f := feed.New(0)
	attached := !pick && (attach != "" || !o.NoWatch)
	if attached {
		f.Attach(ctx, attach)
	}
	srcs := o.Sources
	if srcs == nil {
		srcs = Registered(o.NoGPU)
	}
	return &Monitor{Feed: f, Collector: NewCollector(f, srcs...), Pick: pick, attached: attached}, nil
}

// target decides what to attach to: the spec's trainer (which must exist),
// the only live one, or none (attach ""); several live trainers without a
// spec is pick=true.
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

// Snapshot collects one snapshot at now over window w.
func (m *Monitor) Snapshot(now time.Time, w snapshot.Window) snapshot.Snapshot {
	return m.Collector.Collect(now, w)
}

// AwaitLink waits until the first attempt to attach has an answer: the
// feed is connected or failed. It waits at most d plus the time a trainer
// has to say hello (ipc.HelloTimeout), so a silent peer is reported as
// such; at once when nothing is attached.
func (m *Monitor) AwaitLink(ctx context.Context, d time.Duration) {
	if !m.attached {
		return
	}
	deadline := time.Now().Add(d + ipc.HelloTimeout())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		switch m.Feed.Link().State {
		case snapshot.LinkConnected, snapshot.LinkFailed:
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// AwaitDown waits until the feed is no longer connected, at most d.
func (m *Monitor) AwaitDown(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && m.Feed.Link().State == snapshot.LinkConnected {
		time.Sleep(10 * time.Millisecond)
	}
}

// Attached reports whether the monitor watches a trainer: one was named,
// or the only live one was picked.
func (m *Monitor) Attached() bool { return m.attached }

// Close stops the watch and closes the sources.
func (m *Monitor) Close() {
	m.Feed.Close()
	m.Collector.Close()
}
