// Package export serves pipetop's snapshot as Prometheus metrics. The
// snapshot comes from the same collector, feed and samplers as the terminal
// view (tui/collect), sampled at its own interval; a scrape reads the latest
// one, so scrapers neither pay for sampling nor change the rates.
//
// A reading that is missing, not supported or failed is not exported at
// all: an absent series, never a made-up 0. docs/pipetop.md lists every
// metric.
package export

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/tui/snapshot"
)

// Collector is a prometheus.Collector over the latest snapshot. Update
// replaces the snapshot; Collect turns it into constant metrics. It is safe
// for concurrent use.
type Collector struct {
	latest atomic.Pointer[snapshot.Snapshot]
}

// NewCollector returns a Collector with no snapshot yet: it exports nothing
// until the first Update.
func NewCollector() *Collector { return &Collector{} }

// Update makes s the snapshot the next scrapes read. The Collector keeps s;
// the caller must not change it afterwards.
func (c *Collector) Update(s *snapshot.Snapshot) { c.latest.Store(s) }

// Describe sends the descriptor of every metric the Collector can export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs() {
		ch <- d
	}
}

// Collect sends the metrics of the latest snapshot.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.latest.Load()
	if s == nil {
		return
	}
	e := emitter{ch: ch}
	e.gpu(s)
	e.host(&s.CPU)
	e.trainer(s)
}

// emitter writes constant metrics to one Collect's channel.
type emitter struct {
	ch chan<- prometheus.Metric
}

// gauge sends v unless it is not a finite number.
func (e emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.send(d, prometheus.GaugeValue, v, labels...)
}

func (e emitter) counter(d *prometheus.Desc, v float64, labels ...string) {
	e.send(d, prometheus.CounterValue, v, labels...)
}

func (e emitter) send(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	e.ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
}

// reading sends r converted by unit (nil: as is), with r's source as the
// last label, when r holds a value; a missing, unsupported or failed
// reading sends nothing.
func (e emitter) reading(d *prometheus.Desc, r snapshot.Reading, unit func(float64) float64, labels ...string) {
	if !r.OK() {
		return
	}
	v := *r.Value
	if unit != nil {
		v = unit(v)
	}
	e.gauge(d, v, append(labels, sourceLabel(r.Source))...)
}

// Unit conversions to Prometheus base units.
func ratio(percent float64) float64 { return percent / 100 }
func hertz(mhz float64) float64     { return mhz * 1e6 }
func seconds(ns float64) float64    { return ns / 1e9 }

// sourceLabel turns a reading's source ("NVML kernel-active", "GPM",
// "/proc/stat") into a label value (nvml_kernel_active, gpm, proc_stat):
// lower case, every run of other characters one underscore.
func sourceLabel(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteRune(r)
			continue
		}
		gap = true
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// allDescs lists the descriptor of every metric the Collector exports.
func allDescs() []*prometheus.Desc {
	d := []*prometheus.Desc{cpuBusyDesc, trainerMemDesc,
		connectedDesc, startDesc, droppedDesc, gpuBusyDesc, verdictDesc,
		loaderRateDesc, loaderWorkersDesc, loaderBusyDesc, loaderQueueDesc, loaderQueueCapDesc,
		loaderCacheDesc, loaderAmpDesc, loaderBytesDesc, loaderSecondsDesc, loaderErrorsDesc}
	for _, m := range deviceMetrics {
		d = append(d, m.desc)
	}
	for _, m := range hostMetrics {
		d = append(d, m.desc)
	}
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
