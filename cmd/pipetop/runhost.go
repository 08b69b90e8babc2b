package main

import (
	"context"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/sources/host"
	"github.com/pipetop/pipetop/monitor/summary"
)

// keepEvery is how often pipetop run reads the run (threads, pauses) for
// the end-of-run summary: the live view's refresh.
const keepEvery = time.Second

// pauseWindow is the window pipetop run finds the run's periodic pauses
// and their code over: long enough for three pauses a few seconds apart
// (the CPU readings take the live view's shortest window).
var pauseWindow = monitor.Windows[1]

// liveKeeper reads the run pipetop run started as the live view does,
// each refresh, into a summary.Keeper until stopped.
type liveKeeper struct {
	cancel context.CancelFunc
	done   chan struct{}
	keep   *summary.Keeper
}

// keepLive starts reading the threads and pauses of the first trainer
// that pid or one of its descendants publishes (every rank of its run),
// until stopped.
func keepLive(ctx context.Context, pid int) *liveKeeper {
	ctx, cancel := context.WithCancel(ctx)
	k := &liveKeeper{cancel: cancel, done: make(chan struct{}), keep: summary.NewKeeper()}
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
			k.keep.AddSnapshot(&s)
			v := m.Feed.View(now, pauseWindow, false)
			k.keep.AddPauses(v.PID, v.Summary, v.Code)
		}
	}
}

// stop ends the readings and returns what was kept by trainer pid.
func (k *liveKeeper) stop() map[int]summary.Kept {
	k.cancel()
	<-k.done
	return k.keep.Kept()
}
