// Package export serves pipetop's snapshot as Prometheus metrics. The
// snapshot comes from the same collector, feed and samplers as the terminal
// view (package monitor), sampled at its own interval; a scrape reads the latest
// one, so scrapers neither pay for sampling nor change the rates.
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

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Collector is a prometheus.Collector over the latest snapshot. Update
// replaces the snapshot; Collect turns it into constant metrics: the
// trainer's, each source's, and how each source's sampling went. It is
// safe for concurrent use.
type Collector struct {
	sources []SourceMetrics // of the monitor's sources that serve metrics
	latest  atomic.Pointer[snapshot.Snapshot]
	live    LiveTotals
	ranks   RankTotals
	host    string
}

// RankTotals returns the current totals of one rank of the run the
// monitor follows, as LiveTotals does for a single trainer.
type RankTotals func(rank int) (t *stage.Totals, pid int, startNs int64, ok bool)

// SetRankLive makes scrapes read each rank's counters from live rather
// than from the latest snapshot (see SetLive), so that a rank's counters
// and last step time are as fresh as the scrape.
func (c *Collector) SetRankLive(live RankTotals) { c.ranks = live }

// SetHost sets the host label of pipetop_trainer_info: the name of the
// machine the exporter runs on, which a remote view shows for each rank.
func (c *Collector) SetHost(host string) { c.host = host }

// LiveTotals returns the current totals of the trainer process the feed is
// attached to, with that process's pid and start time (Unix ns); ok is
// false when there is none. feed.Feed.Totals is one.
type LiveTotals func() (t *stage.Totals, pid int, startNs int64, ok bool)

// SetLive makes scrapes read the trainer's counters and histograms from
// live rather than from the latest snapshot, so that they are as fresh as
// the scrape whatever the sampling interval. Counts of another process
// than the snapshot's (a restart between two samples) are not used.
func (c *Collector) SetLive(live LiveTotals) { c.live = live }

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
	if len(s.Ranks) == 0 {
		e.trainer(s, freshest(s, c.live), c.host)
		return
	}
	for i := range s.Ranks {
		rs := rankSnapshot(s, &s.Ranks[i])
		var live LiveTotals
		if c.ranks != nil {
			rank := s.Ranks[i].Rank
			live = func() (*stage.Totals, int, int64, bool) { return c.ranks(rank) }
		}
		e.trainer(&rs, freshest(&rs, live), c.host)
	}
}

// rankSnapshot is the part of s one rank of a run exports: its trainer,
// link, summary, loader and totals, and the run's verdict when it names
// this rank (its own otherwise).
func rankSnapshot(s *snapshot.Snapshot, r *snapshot.Rank) snapshot.Snapshot {
	rs := snapshot.Snapshot{Link: snapshot.Link{State: r.Link}, Trainer: r.Trainer, Summary: r.Summary,
		Verdict: r.Verdict, Loader: r.Loader, Totals: r.Totals}
	if v := s.Verdict; v != nil && v.Rank != nil && *v.Rank == r.Rank {
		rs.Verdict = v
	}
	return rs
}

// freshest returns the freshest totals of the snapshot's trainer process:
// live's when they are that process's (live may be nil).
func freshest(s *snapshot.Snapshot, live LiveTotals) *stage.Totals {
	t := s.Trainer
	if live == nil || t == nil {
		return s.Totals
	}
	counts, pid, startNs, ok := live()
	var want int64
	if t.Started != nil {
		want = t.Started.UnixNano()
	}
	if !ok || pid != t.PID || startNs != want {
		return s.Totals
	}
	return counts
}
