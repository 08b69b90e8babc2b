// Package export serves pipetop's snapshot as Prometheus metrics. The
// snapshot comes from the same collector, feed and samplers as the terminal
// view (package monitor), sampled at its own interval; a scrape reads the latest
// one, so scrapers neither pay for sampling nor change the rates.
//
// A reading that is missing, not supported or failed is not exported at
// all: an absent series, never a made-up 0. docs/pipetop.md lists every
// metric.
package export

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Collector is a prometheus.Collector over the latest snapshot. Update
// replaces the snapshot; Collect turns it into constant metrics: the
// trainer's, each source's, and how each source's sampling went. It is
// safe for concurrent use.
type Collector struct {
	sources []source.Source
	latest  atomic.Pointer[snapshot.Snapshot]
}

// NewCollector returns a Collector over the given sources with no snapshot
// yet: it exports nothing until the first Update.
func NewCollector(sources []source.Source) *Collector { return &Collector{sources: sources} }

// Update makes s the snapshot the next scrapes read. The Collector keeps s;
// the caller must not change it afterwards.
func (c *Collector) Update(s *snapshot.Snapshot) { c.latest.Store(s) }

var (
	samplerSecondsDesc = prometheus.NewDesc("pipetop_sampler_duration_seconds",
		"How long the source's last sampling took.", []string{"sampler"}, nil)
	samplerSuccessDesc = prometheus.NewDesc("pipetop_sampler_success",
		"1 when the source's last sampling worked as a whole, else 0.", []string{"sampler"}, nil)
)

// Describe sends the descriptor of every metric the Collector can export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range trainerDescs() {
		ch <- d
	}
	ch <- samplerSecondsDesc
	ch <- samplerSuccessDesc
	for _, src := range c.sources {
		src.Describe(ch)
	}
}

// Collect sends the metrics of the latest snapshot.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.latest.Load()
	if s == nil {
		return
	}
	e := emitter{source.Emitter{Ch: ch}}
	for _, src := range c.sources {
		src.Collect(s, e.Emitter)
	}
	for _, st := range s.Samplers {
		e.Gauge(samplerSecondsDesc, st.Seconds, st.Name)
		ok := 0.0
		if st.OK {
			ok = 1
		}
		e.Gauge(samplerSuccessDesc, ok, st.Name)
	}
	e.trainer(s)
}

// emitter adds the trainer's metrics to source.Emitter.
type emitter struct {
	source.Emitter
}

// trainerDescs lists the descriptor of every trainer metric.
func trainerDescs() []*prometheus.Desc {
	d := []*prometheus.Desc{connectedDesc, startDesc, droppedDesc, gpuBusyDesc, verdictDesc,
		loaderRateDesc, loaderWorkersDesc, loaderBusyDesc, loaderQueueDesc, loaderQueueCapDesc,
		loaderCacheDesc, loaderAmpDesc, loaderBytesDesc, loaderSecondsDesc, loaderErrorsDesc}
	for _, m := range summaryMetrics {
		d = append(d, m.desc)
	}
	for _, m := range stageMetrics {
		d = append(d, m.desc)
	}
	for _, m := range stageGPUMetrics {
		d = append(d, m.desc)
	}
	return d
}
