package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/summary"
)

// KeepEvery is how often pipetop run reads the run (threads, pauses) for
// the end-of-run summary when no screen refreshes it, and at most how
// often it keeps a refresh's readings when one does.
const KeepEvery = time.Second

// PauseWindow is the window pipetop run finds the run's periodic pauses
// and their code over: long enough for three pauses a few seconds apart
// (the CPU readings take whatever window the refresh had: they do not
// depend on it).
var PauseWindow = monitor.Windows[1]

// RecordGrace is how long a recording goes on after its command exits,
// for the frames still on their way.
const RecordGrace = 300 * time.Millisecond

// openFor opens the one monitor of the trainer at socket, with what its
// watchers need: a recording takes every frame as it comes (steps, as
// pipetop record does); otherwise the monitor is a full screen's
// (monitor.ScreenOptions), refreshed every refresh, which asks for the
// trainer's recent minute only when a live view shows it.
func openFor(ctx context.Context, socket string, sources []source.Source, record, live bool, refresh time.Duration) (*monitor.Monitor, error) {
	o := monitor.Options{Sources: sources, BriefRanks: true}
	if !record {
		if refresh <= 0 {
			refresh = time.Second
		}
		o = monitor.ScreenOptions(sources, refresh)
		o.Backfill = live
	}
	return monitor.Open(ctx, socket, o)
}

// shared is a monitor and who refreshes it: the screen while one shows
// it, else drive.
type shared struct {
	m       *monitor.Monitor
	showing atomic.Bool // a screen refreshes the monitor
	driving sync.WaitGroup
}

// startDriving refreshes the monitor with refresh every KeepEvery while no
// screen does, until ctx ends (stopDriving waits for it).
func (s *shared) startDriving(ctx context.Context, refresh func(time.Time)) {
	s.driving.Add(1)
	go func() {
		defer s.driving.Done()
		t := time.NewTicker(KeepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if !s.showing.Load() {
					refresh(now)
				}
			}
		}
	}()
}

// stopDriving waits for the refreshes started by startDriving to end
// (their ctx ended).
func (s *shared) stopDriving() { s.driving.Wait() }

// show runs the live view on the monitor, holding out, while the view
// refreshes it.
func (s *shared) show(ctx context.Context, show Show, out *child.Held) error {
	s.showing.Store(true)
	defer s.showing.Store(false)
	out.Hold()
	defer out.Release()
	return show(ctx, s.m)
}

// watch is the monitor of the trainer a command started, once it
// publishes: its recording, its keeper and the refreshes that feed them
// while no screen does.
type watch struct {
	shared
	cancel context.CancelFunc
	done   chan struct{} // closed when the monitor is open, or never will be
	rec    *monitor.Recorder
	record string // the recording's path, "" for none
	err    error  // of the open or the recording's start
	keep   *summary.Keeper
}

// watchChild starts watching the first trainer that p or one of its
// descendants publishes (every rank of its run), in the background: one
// monitor, with the keeper and, with c.Record, the recording.
func watchChild(ctx context.Context, p *child.Process, c Config, live bool) *watch {
	ctx, cancel := context.WithCancel(ctx)
	w := &watch{cancel: cancel, done: make(chan struct{}), record: c.Record, keep: summary.NewKeeper()}
	go func() {
		defer close(w.done)
		sock, ok := child.AwaitSocket(p.Pid(), ctx.Done())
		if !ok {
			return
		}
		m, err := openFor(ctx, sock, c.Sources(), c.Record != "", live, c.Refresh)
		if err != nil {
			w.err = err
			return
		}
		w.m = m
		w.subscribeKeeper()
		if c.Record != "" {
			w.rec, w.err = monitor.StartRecorder(ctx, m, monitor.RecordOptions{Path: c.Record,
				Source: "pipetop run -- " + strings.Join(c.Argv, " "), Interval: time.Second, Driven: true})
			if w.err == nil {
				fmt.Fprintf(c.Stderr, "pipetop: recording the run to %s\n", c.Record)
			}
		}
		w.startDriving(ctx, func(now time.Time) { m.Snapshot(now, monitor.Windows[0]) })
	}()
	return w
}

// PauseEvery is how often pipetop run looks for the pauses' code over
// PauseWindow: a view of its own, of up to 30,000 steps a second from a
// fast trainer that sends each step (a recording's).
const PauseEvery = 5 * time.Second

// subscribeKeeper keeps the CPU readings of the monitor's refreshes, at
// most one a KeepEvery, and the pauses' code, at most once a PauseEvery
// and only of a trainer that sends stack samples, for the end-of-run
// verdict.
func (w *watch) subscribeKeeper() {
	var last, lastPauses time.Time
	w.m.Snapshotter.Subscribe(func(r *monitor.Refresh) {
		s := r.Snapshot
		if !r.Judged || (!last.IsZero() && s.Time.Sub(last) < KeepEvery*9/10) {
			return
		}
		last = s.Time
		w.keep.AddSnapshot(s)
		if s.Code == nil || (!lastPauses.IsZero() && s.Time.Sub(lastPauses) < PauseEvery*9/10) {
			return
		}
		lastPauses = s.Time
		if v, ok := r.View(PauseWindow); ok {
			w.keep.AddPauses(v.PID, v.Summary, v.Code)
		}
	})
}

// showOpen runs the live view on the monitor once it is open; ok is false
// when it never opened.
func (w *watch) showOpen(ctx context.Context, show Show, out *child.Held) (ok bool, err error) {
	select {
	case <-w.done:
	case <-ctx.Done():
		return false, nil
	}
	if w.m == nil {
		return false, w.err
	}
	return true, w.show(ctx, show, out)
}

// showUntilExit shows the live view of p's trainer until p exits (or the
// user closes it, and then the run goes on; a Ctrl-C stops the run).
func (w *watch) showUntilExit(ctx context.Context, p *child.Process, show Show, out *child.Held, say func(string, ...any)) {
	say("the monitor opens when pid %d starts training", p.Pid())
	childCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.Exited():
		case <-childCtx.Done():
		}
		cancel()
	}()
	ok, err := w.showOpen(childCtx, show, out)
	switch {
	case !ok:
		if err != nil {
			say("monitor: %v", err)
		}
		return // the child ended before it published anything
	case errors.Is(err, ErrInterrupted):
		say("Ctrl-C: stopping pid %d and what it started", p.Pid())
		p.Interrupt()
		return
	case err != nil:
		say("monitor: %v", err)
	}
	if childCtx.Err() == nil {
		say("monitor closed; pid %d runs on (Ctrl-C stops it)", p.Pid())
	}
}

// stop ends the watch: the recording (after RecordGrace, for the frames
// on their way) and the monitor. It returns what was kept, by trainer pid,
// and the recording's error.
func (w *watch) stop() (map[int]summary.Kept, error) {
	if w.record != "" {
		time.Sleep(RecordGrace)
	}
	w.cancel()
	<-w.done
	w.stopDriving()
	err := w.err
	if w.rec != nil {
		if rerr := w.rec.Stop(); err == nil {
			err = rerr
		}
	}
	var stacks map[int]*stage.StackSamples
	if w.m != nil {
		stacks = w.m.RunStacks()
		w.m.Close()
	}
	switch {
	case w.record == "":
		err = nil // the summary is judged without what the keeper missed
	case err != nil:
		err = fmt.Errorf("record %s: %w", w.record, err)
	case w.m == nil:
		err = fmt.Errorf("record %s: the command published no training steps; nothing recorded", w.record)
	}
	kept := w.keep.Kept()
	for pid, s := range stacks {
		k := kept[pid]
		k.Stacks = s
		kept[pid] = k
	}
	return kept, err
}
