package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources/host"
	"github.com/pipetop/pipetop/monitor/summary"
)

// keepEvery is how often pipetop run reads the run (threads, pauses) for the
// end-of-run summary: the live view's refresh.
const keepEvery = time.Second

// pauseWindow is the window pipetop run finds the run's periodic pauses
// and their code over: long enough for three pauses a few seconds apart
// (the CPU readings take the live view's shortest window).
var pauseWindow = monitor.Windows[1]

// liveKeeper keeps what the live view reads of the run pipetop run started
// each refresh, for the end-of-run verdict, by trainer pid: the CPU
// readings' means over the refreshes on which the trainer had trained,
// and the code of each stage's periodic pauses from the newest refresh
// that told it from the rest of the steps.
type liveKeeper struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	byPID  map[int]*summary.CPUMeans
	pauses map[int]map[string]stage.CodeGroup
}

// keepLive starts reading the threads and pauses of the first trainer that pid or
// one of its descendants publishes (every rank of its run), until stopped.
func keepLive(ctx context.Context, pid int) *liveKeeper {
	ctx, cancel := context.WithCancel(ctx)
	k := &liveKeeper{cancel: cancel, done: make(chan struct{}), byPID: map[int]*summary.CPUMeans{},
		pauses: map[int]map[string]stage.CodeGroup{}}
	go func() {
		defer close(k.done)
		k.read(ctx, pid)
	}()
	return k
}

// read samples the run once a second until ctx ends.
func (k *liveKeeper) read(ctx context.Context, pid int) {
	sock, ok := child.AwaitSocket(pid, ctx.Done())
	if !ok {
		return
	}
	m, err := monitor.Open(ctx, sock, monitor.Options{Sources: host.Open(), Aggregates: true})
	if err != nil {
		return // the summary is judged without them, as before
	}
	defer m.Close()
	t := time.NewTicker(keepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := m.Snapshot(now, monitor.Windows[0])
			k.add(&s)
			v := m.Feed.View(now, pauseWindow, false)
			k.addPauses(v.PID, v.Summary, v.Code)
		}
	}
}

// add keeps one refresh's readings when the trainer trained in its window.
func (k *liveKeeper) add(s *snapshot.Snapshot) {
	if s.Trainer == nil || s.Summary == nil || s.Summary.Steps == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.byPID[s.Trainer.PID]
	if m == nil {
		m = &summary.CPUMeans{}
		k.byPID[s.Trainer.PID] = m
	}
	m.AddSnapshot(s)
}

// addPauses keeps the pause code of one refresh of trainer pid over
// pauseWindow (its summary sm, its stack samples' profile c), when the
// trainer trained in it and a pause was told.
func (k *liveKeeper) addPauses(pid int, sm *stage.Summary, c *stage.CodeProfile) {
	if sm == nil || sm.Steps == 0 || c == nil || len(c.Pauses) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pauses[pid]
	if p == nil {
		p = map[string]stage.CodeGroup{}
		k.pauses[pid] = p
	}
	for _, g := range c.Pauses {
		p[g.Stage] = g
	}
}

// stop ends the readings and returns what was kept by trainer pid.
func (k *liveKeeper) stop() map[int]summary.Kept {
	k.cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[int]summary.Kept{}
	for pid, m := range k.byPID {
		if r := m.Run(); r != nil {
			out[pid] = summary.Kept{CPU: r}
		}
	}
	for pid, p := range k.pauses {
		kept := out[pid]
		kept.Pauses = slices.SortedFunc(maps.Values(p), func(a, b stage.CodeGroup) int { return strings.Compare(a.Stage, b.Stage) })
		out[pid] = kept
	}
	return out
}
