// Package source is the interface every host sampler of the monitor
// implements: CPU, GPUs, the trainer's processes, and whatever comes next.
// A source samples at each refresh, writes its own part of the snapshot,
// and describes its own Prometheus metrics, so adding one touches its own
// package and one line of the registry in package monitor.
package source

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Target is what the sources watch besides the machine: the attached
// trainer's process (its pid in this namespace as seen from the host), 0
// when there is none.
type Target struct {
	PID int
}

// Source is one registered sampler.
type Source interface {
	// Name labels the source in pipetop_sampler_* metrics ("cpu", "gpu").
	Name() string
	// Sample reads the source at now for the target. An error means the
	// reading failed as a whole; partial failures show in the snapshot.
	Sample(now time.Time, t Target) error
	// Fill writes the last reading into the source's part of s.
	Fill(s *snapshot.Snapshot)
	// Describe sends the descriptor of every metric Collect can send.
	Describe(ch chan<- *prometheus.Desc)
	// Collect sends the metrics of s that belong to this source.
	Collect(s *snapshot.Snapshot, e Emitter)
	// Close releases what the source holds (a library handle).
	Close() error
}
