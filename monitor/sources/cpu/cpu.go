// Package cpu is the monitor's source for the machine's cores, load and
// memory (host.CPUSampler, read from /proc).
package cpu

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Sampler reads the machine's CPU and memory (host.CPUSampler).
type Sampler interface {
	Sample(now time.Time) error
	Snapshot() host.CPUSnapshot
}

// Source is the CPU source.
type Source struct{ s Sampler }

// New returns the CPU source over s.
func New(s Sampler) *Source { return &Source{s: s} }

// Name implements source.Source.
func (c *Source) Name() string { return "cpu" }

// Sample implements source.Source.
func (c *Source) Sample(now time.Time, _ source.Target) error { return c.s.Sample(now) }

// Fill implements source.Source.
func (c *Source) Fill(s *snapshot.Snapshot) { s.CPU = snapshot.FromCPU(c.s.Snapshot()) }

// Close implements source.Source.
func (c *Source) Close() error { return nil }

