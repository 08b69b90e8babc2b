// Package gpu is the monitor's source for NVIDIA devices (metrics/gpu over
// NVML, with GPM where the device has it) and the trainer's use of them.
package gpu

import (
	"slices"
	"time"

	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Sampler reads the GPUs (metrics/gpu.Sampler).
type Sampler interface {
	SetPIDs(pids ...int)
	Sample(now time.Time) error
	Snapshot() mgpu.Snapshot
}

// Part is the GPU source's part of the snapshot: GPU. It gives the verdict
// the trainer's device: its memory and activity (source.HostFiller).
var Part = part{source.Field{Key: "gpu", Of: func(s *snapshot.Snapshot) any { return &s.GPU }}}

// part is the gpu source's part with its host readings.
type part struct{ source.Field }

// Source is the GPU source.
type Source struct {
	part
	s     Sampler
	close func() error
	pids  []int
}

// New returns the GPU source over s; closeFn (nil: nothing) releases it.
func New(s Sampler, closeFn func() error) *Source {
	if closeFn == nil {
		closeFn = func() error { return nil }
	}
	return &Source{part: Part, s: s, close: closeFn}
}

// Sample implements source.Source: the target's pid is watched for its
// device memory.
func (g *Source) Sample(now time.Time, t source.Target) error {
	var pids []int
	if t.PID > 0 {
		pids = []int{t.PID}
	}
	if !slices.Equal(pids, g.pids) {
		g.pids = pids
		g.s.SetPIDs(pids...)
	}
	return g.s.Sample(now)
}

// Fill implements source.Source.
func (g *Source) Fill(s *snapshot.Snapshot) { s.GPU = fromSampler(g.s.Snapshot()) }

// Close implements source.Source.
func (g *Source) Close() error { return g.close() }
