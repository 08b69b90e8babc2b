// Package threads is the monitor's source for the threads of the
// trainer's tree and the CPU the run may use: per-thread CPU and run-queue
// wait, the cgroup quota and its throttling, the host's CPU pressure
// (host.ThreadSampler).
package threads

import (
	"time"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Sampler reads one process tree's threads (host.ThreadSampler).
type Sampler interface {
	SetPID(pid, training int)
	Sample(now time.Time) error
	Snapshot() host.ThreadsReading
}

// Part is the threads source's part of the snapshot: Threads. It gives the
// verdict the run's threads and the CPU it may use (source.HostFiller).
var Part = part{source.Field{Key: "threads", Of: func(s *snapshot.Snapshot) any { return &s.Threads }}}

// part is the threads source's part with its host readings.
type part struct{ source.Field }

// Source is the threads source.
type Source struct {
	part
	s             Sampler
	pid, training int
	prev          host.CPUQuota
	share         float64
}

// New returns the threads source over s.
func New(s Sampler) *Source { return &Source{part: Part, s: s} }

// Sample implements source.Source; without a trainer there is nothing to
// read.
func (p *Source) Sample(now time.Time, t source.Target) error {
	if t.PID != p.pid || t.TrainingTID != p.training {
		p.pid, p.training = t.PID, t.TrainingTID
		p.prev = host.CPUQuota{}
		if t.PID > 0 {
			p.s.SetPID(t.PID, t.TrainingTID)
		}
	}
	if p.pid <= 0 {
		return nil
	}
	err := p.s.Sample(now)
	q := p.s.Snapshot().Quota
	p.share = 0
	if n := q.Periods - p.prev.Periods; p.prev.Version != 0 && q.Periods > p.prev.Periods && q.Throttled >= p.prev.Throttled {
		p.share = float64(q.Throttled-p.prev.Throttled) / float64(n)
	}
	p.prev = q
	return err
}

// Fill implements source.Source.
func (p *Source) Fill(s *snapshot.Snapshot) {
	if p.pid <= 0 {
		return
	}
	r := p.s.Snapshot()
	if !r.Alive {
		return
	}
	t := &snapshot.Threads{Threads: r.Threads, Truncated: r.Truncated,
		AffinityCPUs: r.AffinityCPUs, UsableCores: r.UsableCores,
		Quota: snapshot.Quota{Version: r.Quota.Version, Dir: r.Quota.Dir, CPUs: r.Quota.CPUs, Periods: r.Quota.Periods,
			Throttled: r.Quota.Throttled, ThrottledSeconds: r.Quota.ThrottledSeconds, ThrottledShare: p.share}}
	if r.PressureOK {
		t.Pressure = &snapshot.Pressure{SomeAvg10: r.PressureSome.Avg10, FullAvg10: r.PressureFull.Avg10,
			SomeTotalUs: r.PressureSome.Total, FullTotalUs: r.PressureFull.Total}
	}
	s.Threads = t
}

// Close implements source.Source.
func (p *Source) Close() error { return nil }
