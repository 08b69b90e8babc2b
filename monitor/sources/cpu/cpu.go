// Package cpu is the monitor's source for the machine's cores, load and
// memory (host.CPUSampler, read from /proc).
package cpu

import (
	"time"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Sampler reads the machine's CPU and memory (host.CPUSampler).
type Sampler interface {
	Sample(now time.Time) error
	Snapshot() host.CPUSnapshot
}

// Part is the CPU source's part of the snapshot: CPU. It gives the verdict
// the host's memory and swap (source.HostFiller).
var Part = part{source.Field{Key: "cpu", Of: func(s *snapshot.Snapshot) any { return &s.CPU }}}

// part is the cpu source's part with its host readings.
type part struct{ source.Field }

// Source is the CPU source.
type Source struct {
	part
	s Sampler
}

// New returns the CPU source over s.
func New(s Sampler) *Source { return &Source{part: Part, s: s} }

// Sample implements source.Source.
func (c *Source) Sample(now time.Time, _ source.Target) error { return c.s.Sample(now) }

// Fill implements source.Source.
func (c *Source) Fill(s *snapshot.Snapshot) { s.CPU = fromSampler(c.s.Snapshot()) }

// Close implements source.Source.
func (c *Source) Close() error { return nil }
