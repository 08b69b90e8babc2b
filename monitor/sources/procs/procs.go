// Package procs is the monitor's source for the trainer's process tree:
// the trainer and its descendants, such as loader workers
// (host.ProcSampler, read from /proc).
package procs

import (
	"time"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Sampler reads one process tree (host.ProcSampler).
type Sampler interface {
	SetPID(pid int)
	Sample(now time.Time) error
	Snapshot() host.ProcSnapshot
}

// Part is the process source's part of the snapshot: Process. It gives the
// verdict the trainer's resident memory (source.HostFiller).
var Part = part{source.Field{Key: "process", Of: func(s *snapshot.Snapshot) any { return &s.Process }}}

// part is the procs source's part with its host readings.
type part struct{ source.Field }

// Source is the trainer-process source.
type Source struct {
	part
	s   Sampler
	pid int
}

// New returns the process source over s.
func New(s Sampler) *Source { return &Source{part: Part, s: s} }

// Sample implements source.Source; without a trainer there is nothing to
// read.
func (p *Source) Sample(now time.Time, t source.Target) error {
	if t.PID != p.pid {
		p.pid = t.PID
		if t.PID > 0 {
			p.s.SetPID(t.PID)
		}
	}
	if p.pid <= 0 {
		return nil
	}
	return p.s.Sample(now)
}

// Fill implements source.Source.
func (p *Source) Fill(s *snapshot.Snapshot) {
	if p.pid > 0 {
		s.Process = fromSampler(p.s.Snapshot())
	}
}

// Close implements source.Source.
func (p *Source) Close() error { return nil }
