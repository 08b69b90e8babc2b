package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// SourceMetrics is the Prometheus side of one monitor source: the metrics
// it serves from that source's part of the snapshot. It lives here, not in
// the source, so that the monitor and pipetrain do not link the Prometheus
// client.
type SourceMetrics interface {
	// Describe sends the descriptor of every metric Emit can send.
	Describe(ch chan<- *prometheus.Desc)
	// Emit sends the source's metrics of s.
	Emit(s *snapshot.Snapshot, e Emitter)
}

// sourceMetrics are the metrics of every monitor source, by source name
// (source.Part.Name): each source of the table (monitor/sources) has an
// entry, noMetrics when it serves none, and no entry names another source
// (TestEverySourceHasItsMetrics).
var sourceMetrics = map[string]SourceMetrics{
	"cpu":           cpuMetrics{},
	"process":       noMetrics{}, // on screen, in --json and in recordings only
	"threads":       threadMetrics{},
	"gpu":           gpuMetrics{},
	"gpu_processes": gpuProcMetrics{},
}

// noMetrics is the entry of a source that serves no metrics.
type noMetrics struct{}

// Describe implements SourceMetrics: nothing.
func (noMetrics) Describe(chan<- *prometheus.Desc) {}

// Emit implements SourceMetrics: nothing.
func (noMetrics) Emit(*snapshot.Snapshot, Emitter) {}
