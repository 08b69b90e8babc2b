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

// sourceMetrics are the metrics of the sources that serve some, by source
// name (source.Part.Name); a source without an entry is on screen, in
// --json and in recordings only (the process tree).
var sourceMetrics = map[string]SourceMetrics{
	"cpu":           cpuMetrics{},
	"gpu":           gpuMetrics{},
	"gpu_processes": gpuProcMetrics{},
	"threads":       threadMetrics{},
}
