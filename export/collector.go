// Package export serves pipetop's snapshot as Prometheus metrics. The
// snapshot comes from the same collector, feed and samplers as the terminal
// view (package monitor), sampled at its own interval; a scrape reads the latest
// one, so scrapers neither pay for sampling nor change the rates, with its
// counters brought up to the scrape (monitor.Snapshotter.Fresh). The
// exporter reads nothing but snapshots.
//
// Trainer metrics are counters and histograms over the life of the trainer
// process (steps, samples, stage seconds, step wall and data_wait times),
// so that Prometheus can rate them over any window and add them up across
// ranks and hosts; the verdict is the one reading over pipetop's own
// window. A reading that is missing, not supported or failed is not
// exported at all: an absent series, never a made-up 0. docs/pipetop.md
// lists every metric, docs/prometheus.md how to query them.
package export

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Collector is a prometheus.Collector over the latest snapshot. Update
// replaces the snapshot; Collect turns it into constant metrics: the
// trainer's, each source's, and how each source's sampling went. It is
// safe for concurrent use.
type Collector struct {
	sources []SourceMetrics // of the monitor's sources that serve metrics
	latest  atomic.Pointer[snapshot.Snapshot]
	fresh   func(*snapshot.Snapshot) *snapshot.Snapshot
	host    string
}

// SetHost sets the host label of pipetop_trainer_info: the name of the
// machine the exporter runs on, which a remote view shows for each rank.
func (c *Collector) SetHost(host string) { c.host = host }

// SetFresh makes each scrape read fresh(latest) rather than the latest
// snapshot itself: the same snapshot with its counters brought up to the
// scrape (monitor.Snapshotter.Fresh), so that they are as fresh as the
// scrape whatever the sampling interval.
func (c *Collector) SetFresh(fresh func(*snapshot.Snapshot) *snapshot.Snapshot) { c.fresh = fresh }

// NewCollector returns a Collector over the metrics of the named monitor
// sources (source.Part.Name; sources without metrics are skipped) with no
// snapshot yet: it exports nothing until the first Update.
func NewCollector(sources []string) *Collector {
	c := &Collector{}
	for _, name := range sources {
		if m, ok := sourceMetrics[name]; ok {
			c.sources = append(c.sources, m)
		}
	}
	return c
}

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
	if c.fresh != nil {
		s = c.fresh(s)
	}
	e := Emitter{Ch: ch}
	for _, src := range c.sources {
		src.Emit(s, e)
	}
	for _, st := range s.Samplers {
		e.Gauge(samplerSecondsDesc, st.Seconds, st.Name)
		ok := 0.0
		if st.OK {
			ok = 1
		}
		e.Gauge(samplerSuccessDesc, ok, st.Name)
	}
	if len(s.Ranks) == 0 { // the single trainer, served as a run's rank is
		e.trainer(&snapshot.Rank{Link: s.Link.State, Trainer: s.Trainer, Summary: s.Summary, Verdict: s.Verdict,
			Loader: s.Loader, Totals: s.Totals}, c.host)
		return
	}
	for _, r := range s.Ranks {
		if v := s.Verdict; v != nil && v.Rank != nil && *v.Rank == r.Rank {
			r.Verdict = v // the run's verdict names this rank
		}
		e.trainer(&r, c.host)
	}
}
