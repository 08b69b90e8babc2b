package export

import (
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Emitter writes constant metrics to one scrape's channel.
type Emitter struct {
	Ch chan<- prometheus.Metric
}

// Gauge sends v unless it is not a finite number.
func (e Emitter) Gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.send(d, prometheus.GaugeValue, v, labels...)
}

// Counter sends v as a counter unless it is not a finite number.
func (e Emitter) Counter(d *prometheus.Desc, v float64, labels ...string) {
	e.send(d, prometheus.CounterValue, v, labels...)
}

func (e Emitter) send(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	e.Ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
}

// Reading sends r converted by unit (nil: as is), with r's source as the
// last label, when r holds a value; a missing, unsupported or failed
// reading sends nothing: an absent series, never a made-up 0.
func (e Emitter) Reading(d *prometheus.Desc, r snapshot.Reading, unit func(float64) float64, labels ...string) {
	if !r.OK() {
		return
	}
	v := *r.Value
	if unit != nil {
		v = unit(v)
	}
	e.Gauge(d, v, append(labels, Label(r.Source))...)
}

// Unit conversions to Prometheus base units.

// Ratio converts a percentage to a 0..1 ratio.
func Ratio(percent float64) float64 { return percent / 100 }

// Hertz converts MHz to Hz.
func Hertz(mhz float64) float64 { return mhz * 1e6 }

// Seconds converts nanoseconds to seconds.
func Seconds(ns float64) float64 { return ns / 1e9 }

// Itoa is strconv.Itoa, for label values.
func Itoa(i int) string { return strconv.Itoa(i) }

// Label turns a reading's source ("NVML kernel-active", "GPM",
// "/proc/stat") into a label value (nvml_kernel_active, gpm, proc_stat):
// lower case, every run of other characters one underscore.
func Label(s string) string {
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
