package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// cpuMetrics are the cpu source's metrics: per-core busy share, load and
// memory.
type cpuMetrics struct{}

var coreBusyDesc = prometheus.NewDesc("pipetop_host_cpu_busy_ratio",
	"Busy share of one core between two samples (iowait counts as idle).",
	[]string{"cpu", "source"}, nil)

// hostMetric is one machine-wide reading, already in base units.
type hostMetric struct {
	desc *prometheus.Desc
	get  func(*snapshot.CPU) snapshot.Reading
}

func hostDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"source"}, nil)
}

var hostMetrics = []hostMetric{
	{hostDesc("pipetop_host_load1", "Run-queue load average over 1 minute."),
		func(c *snapshot.CPU) snapshot.Reading { return c.Load1 }},
	{hostDesc("pipetop_host_load5", "Run-queue load average over 5 minutes."),
		func(c *snapshot.CPU) snapshot.Reading { return c.Load5 }},
	{hostDesc("pipetop_host_load15", "Run-queue load average over 15 minutes."),
		func(c *snapshot.CPU) snapshot.Reading { return c.Load15 }},
	{hostDesc("pipetop_host_memory_total_bytes", "Memory in all."),
		func(c *snapshot.CPU) snapshot.Reading { return c.MemTotal }},
	{hostDesc("pipetop_host_memory_used_bytes", "Memory in use: total minus available, as free counts it."),
		func(c *snapshot.CPU) snapshot.Reading { return c.MemUsed }},
	{hostDesc("pipetop_host_swap_total_bytes", "Swap space in all."),
		func(c *snapshot.CPU) snapshot.Reading { return c.SwapTotal }},
	{hostDesc("pipetop_host_swap_used_bytes", "Swap space in use."),
		func(c *snapshot.CPU) snapshot.Reading { return c.SwapUsed }},
}

// Describe implements SourceMetrics.
func (cpuMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- coreBusyDesc
	for _, m := range hostMetrics {
		ch <- m.desc
	}
}

// Emit implements SourceMetrics: per-core CPU and the machine's memory.
func (cpuMetrics) Emit(s *snapshot.Snapshot, e Emitter) {
	for i, r := range s.CPU.Cores {
		e.Reading(coreBusyDesc, r, Ratio, Itoa(i))
	}
	for _, m := range hostMetrics {
		e.Reading(m.desc, m.get(&s.CPU), nil)
	}
}
