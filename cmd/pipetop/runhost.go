package main

import (
	"context"
	"sync"
	"time"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources/host"
	"github.com/pipetop/pipetop/monitor/summary"
)

// runCPUEvery is how often pipetop run reads the run's threads for the
// end-of-run summary: the live view's refresh.
const runCPUEvery = time.Second

// runCPU keeps the CPU readings of the run pipetop run started, as the
// live view judges them each refresh, for the end-of-run summary's CPU
// rules: by trainer pid, their means over the refreshes on which the
// trainer had trained.
type runCPU struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	byPID  map[int]*summary.CPUMeans
}

// keepRunCPU starts reading the threads of the first trainer that pid or
// one of its descendants publishes (every rank of its run), until stopped.
func keepRunCPU(ctx context.Context, pid int) *runCPU {
	ctx, cancel := context.WithCancel(ctx)
	k := &runCPU{cancel: cancel, done: make(chan struct{}), byPID: map[int]*summary.CPUMeans{}}
	go func() {
		defer close(k.done)
		k.read(ctx, pid)
	}()
	return k
}

// read samples the run once a second until ctx ends.
func (k *runCPU) read(ctx context.Context, pid int) {
	sock, ok := child.AwaitSocket(pid, ctx.Done())
	if !ok {
		return
	}
	m, err := monitor.Open(ctx, sock, monitor.Options{Sources: host.Open(), Aggregates: true})
	if err != nil {
		return // the summary is judged without them, as before
	}
	defer m.Close()
	t := time.NewTicker(runCPUEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := m.Snapshot(now, monitor.Windows[0])
			k.add(&s)
		}
	}
}

// add keeps one refresh's readings when the trainer trained in its window.
func (k *runCPU) add(s *snapshot.Snapshot) {
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

// stop ends the readings and returns their means by trainer pid.
func (k *runCPU) stop() map[int]*summary.RunCPU {
	k.cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[int]*summary.RunCPU{}
	for pid, m := range k.byPID {
		if r := m.Run(); r != nil {
			out[pid] = r
		}
	}
	return out
}
