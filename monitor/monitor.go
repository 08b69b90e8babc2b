// Package monitor is pipetop's headless viewer: the link to a trainer
// (package feed), the registered host sources (package source and
// sources/...), the snapshotter that turns both into one snapshot per refresh
// (package snapshot), and the summary windows. The terminal view, --once,
// --json and the Prometheus exporter all read the same snapshot; nothing
// here draws.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
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
	// Sources are the host sources to sample at each refresh, in order
	// (sources.Registered for all of them); nil samples none.
	Sources []source.Source
	// OneRank attaches only the trainer the spec names even when it is one
	// rank of a run (a recording holds one trainer's stream).
	OneRank bool
	// NoWatch does not wait for a trainer to appear when none is live and
	// no spec was given (one-shot snapshots).
	NoWatch bool
	// Batch asks every attached trainer to hold frames up to this long and
	// send them together (ipc.ViewOptions): fewer wake-ups for a viewer
	// that redraws at a slower pace. 0 takes each frame as it comes.
	Batch time.Duration
	// Gated reads every trainer's socket only when a snapshot is taken
	// (ipc.Gate): one wake-up per refresh instead of one per trainer batch.
	Gated bool
	// Aggregates asks every trainer for agg frames instead of steps
	// (ipc.ViewOptions): about one frame a second whatever the step rate.
	Aggregates bool
	// Backfill asks every trainer for the steps it finished in the minute
	// before the attach (ipc.ViewOptions): a one-shot or a fresh view of
	// slow steps judges from the first second instead of warming up.
	Backfill bool
	// BriefRanks keeps each rank of a run but the shown one in brief: in
	// the snapshots (Snapshotter.BriefRanks) and in what the viewer holds
	// of it (feed.NewBrief), for a view that shows only their summaries.
	BriefRanks bool
}

// Monitor is one viewer: a feed attached to a trainer and the snapshotter
// over it and the sources.
type Monitor struct {
	// Feed is the link to a single-process trainer; in a run of several
	// ranks (Group set) it stays unattached and Group holds the links.
	Feed *feed.Feed
	// Group is the link to every rank of a run; nil for a single process.
	Group       *Group
	Snapshotter *Snapshotter
	// Pick is set when several trainers are live and no spec chose one:
	// nothing is attached; the caller lets the user pick, or refuses.
	Pick bool

	attached   bool // the feed is watching for a trainer
	aggregates bool // it asks trainers for agg frames
}

// Open resolves spec (a socket path, pid, name or run id; empty for the
// only live trainer or run), starts watching it until ctx ends, and wires
// the sources. A trainer that is one rank of a run attaches every rank of
// that run. A spec that names no live trainer is an error.
func Open(ctx context.Context, spec string, o Options) (*Monitor, error) {
	view := ipc.ViewOptions{Batch: o.Batch, Aggregates: o.Aggregates, Backfill: o.Backfill}
	if o.Gated {
		view.Gate = ipc.NewGate()
	}
	f := feed.New(0)
	f.SetView(view)
	view = f.ReadStacks()
	t, err := target(ctx, spec, o.OneRank, view)
	if err != nil {
		return nil, err
	}
	m := &Monitor{Feed: f, Pick: t.pick, aggregates: o.Aggregates}
	switch {
	case t.run != "":
		f.Close() // its ranks' feeds read their stacks, not this one
		m.Group = newGroup(ipc.Dir(), t.name, t.run)
		m.Group.brief = o.BriefRanks
		m.Group.start(ctx, view)
		m.attached = true
	case t.conn != nil:
		f.AttachConn(ctx, t.attach, t.ep, t.conn)
		m.attached = true
	case t.process > 0:
		if err := f.AttachProcess(ctx, t.process); err != nil {
			return nil, err
		}
		m.attached = true
	case !t.pick && (t.attach != "" || !o.NoWatch):
		f.Attach(ctx, t.attach)
		m.attached = true
	}
	m.Snapshotter = NewSnapshotter(f, o.Sources...)
	m.Snapshotter.Group = m.Group
	m.Snapshotter.Gate = view.Gate
	m.Snapshotter.BriefRanks = o.BriefRanks
	return m, nil
}

// OpenRemote returns a Monitor whose snapshots come from r (a run read from
// a Prometheus server) instead of local sockets; it samples no local
// source.
func OpenRemote(r Remote) *Monitor {
	f := feed.New(0)
	s := NewSnapshotter(f)
	s.Remote = r
	return &Monitor{Feed: f, Snapshotter: s}
}

// choice is what Open attaches to: a run (run set, its sockets named
// name), one trainer (attach: a path or name, "" for whichever appears;
// conn, when set, the connection already made to it at ep, to watch on),
// or nothing until the user picks (pick).
type choice struct {
	attach, run, name string
	process           int // a process with no trainer socket, shown by its stacks
	pick              bool
	conn              *ipc.Conn
	ep                ipc.Endpoint
}

// target decides what to attach to: the spec's trainer (which must exist)
// or the run it is a rank of, the run named by the spec, the only live
// trainer or run, or none; several live trainers or runs without a spec is
// a pick. The spec's trainer is asked for its hello on the connection the
// feed then watches on (made with view): one connection, not a probe and
// a watch.
func target(ctx context.Context, spec string, oneRank bool, view ipc.ViewOptions) (choice, error) {
	if spec != "" {
		ep, err := ipc.ResolveSpec(spec)()
		if err != nil {
			if run, name, ok := runNamed(ctx, spec); ok && !oneRank {
				return choice{run: run, name: name}, nil
			}
			if pid, ok := processNamed(spec); ok {
				return choice{process: pid}, nil
			}
			return choice{}, err
		}
		if oneRank {
			return choice{attach: ep.Path}, nil
		}
		conn, err := ipc.DialView(ctx, ep.Path, view)
		if err != nil {
			return choice{attach: ep.Path}, nil // the feed tries again, and shows why it fails
		}
		h := conn.Hello()
		if run := RunOf(&h); run != "" {
			conn.Close()
			return choice{run: run, name: ep.Name}, nil
		}
		return choice{attach: ep.Path, conn: conn, ep: ep}, nil
	}
	eps, err := ipc.List()
	if err != nil {
		return choice{}, err
	}
	switch len(eps) {
	case 0:
		return choice{}, nil
	case 1:
		return choice{attach: eps[0].Name}, nil
	}
	if oneRank {
		return choice{pick: true}, nil
	}
	var one choice
	for _, ep := range eps {
		h, err := Hello(ctx, ep.Path)
		if err != nil {
			continue // a socket that does not answer (a stopped rank) is not another trainer to choose
		}
		run := RunOf(h)
		if run == "" || (one.run != "" && run != one.run) {
			return choice{pick: true}, nil
		}
		one.run, one.name = run, ep.Name
	}
	if one.run == "" {
		return choice{pick: true}, nil
	}
	return one, nil
}

// processNamed is the pid spec names when it is a number and that
// process exists: one without a trainer socket, which pipetop shows by
// its Python stacks (feed.AttachProcess).
func processNamed(spec string) (int, bool) {
	pid, err := strconv.Atoi(spec)
	if err != nil || pid <= 0 {
		return 0, false
	}
	_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
	return pid, err == nil
}

// runNamed finds the live run spec names: its run identifier, or the
// trainer name its ranks' sockets share before "-rankR" (pipetrain's
// NAME-rankR.PID.sock); the newest such run, and its sockets' name.
func runNamed(ctx context.Context, spec string) (run, name string, ok bool) {
	eps, err := ipc.List()
	if err != nil {
		return "", "", false
	}
	pid := 0
	for _, ep := range eps {
		h, _ := Hello(ctx, ep.Path)
		r := RunOf(h)
		if r != "" && (r == spec || BaseName(ep.Name) == spec) && ep.PID > pid {
			run, name, pid, ok = r, ep.Name, ep.PID, true
		}
	}
	return run, name, ok
}

// BaseName is a rank's socket name without its "-rankR" suffix.
func BaseName(name string) string {
	i := strings.LastIndex(name, "-rank")
	if i <= 0 {
		return name
	}
	digits := name[i+len("-rank"):]
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return name
	}
	return name[:i]
}

// Snapshot collects one snapshot at now over window w.
func (m *Monitor) Snapshot(now time.Time, w snapshot.Window) snapshot.Snapshot {
	return m.Snapshotter.Snapshot(now, w)
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
		if m.linked() {
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

// linked reports whether the trainer is connected or failed for good; for
// a run, every rank of its world size connected.
func (m *Monitor) linked() bool {
	if m.Group == nil {
		st := m.Feed.Link().State
		return st == snapshot.LinkConnected || st == snapshot.LinkFailed
	}
	feeds := m.Group.Feeds()
	if len(feeds) == 0 || len(feeds) < m.Group.WorldSize() {
		return false
	}
	for _, rf := range feeds {
		if rf.Feed.Link().State != snapshot.LinkConnected {
			return false
		}
	}
	return true
}

// StopWatching stops the links to the trainer (every rank's) and keeps
// what they received: a last snapshot then shows a failed link without a
// next try, since none will come.
func (m *Monitor) StopWatching() {
	m.Feed.Close()
	if m.Group != nil {
		m.Group.close()
	}
}

// RunStacks is the whole run's stack samples read from outside each
// trainer (package stacks), by its pid; empty when none were.
func (m *Monitor) RunStacks() map[int]*stage.StackSamples {
	feeds := []*feed.Feed{m.Feed}
	if m.Group != nil {
		for _, rf := range m.Group.Feeds() {
			feeds = append(feeds, rf.Feed)
		}
	}
	out := map[int]*stage.StackSamples{}
	for _, f := range feeds {
		if pid, s := f.RunStacks(); s != nil {
			out[pid] = s
		}
	}
	return out
}

// Close stops the watch and closes the sources.
func (m *Monitor) Close() {
	m.StopWatching()
	m.Snapshotter.Close()
}

// AwaitEvery is how often OpenAwait looks again for a named trainer that
// is not there yet.
const AwaitEvery = 500 * time.Millisecond

// OpenAwait is Open for a daemon (pipetop export), often started before
// the trainer it serves: while spec names no live trainer it says so once
// through waiting and looks again every AwaitEvery until ctx ends.
func OpenAwait(ctx context.Context, spec string, o Options, waiting func(error)) (*Monitor, error) {
	said := false
	for {
		m, err := Open(ctx, spec, o)
		if err == nil || spec == "" || !errors.Is(err, ipc.ErrNoTrainer) {
			return m, err
		}
		if !said {
			waiting(err)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("export %s: %w", spec, ctx.Err())
		case <-time.After(AwaitEvery):
		}
	}
}

// PickOne is the error of a command that needs one trainer when several
// are live: how names the command that takes one (pipetop HOW NAME).
func PickOne(how string) error {
	eps, _ := ipc.List()
	return fmt.Errorf("%d live trainers: choose one with pipetop %s NAME (see pipetop ls)", len(eps), how)
}
