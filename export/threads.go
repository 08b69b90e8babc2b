package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// threadMetrics are the threads source's metrics: the run's threads by
// role, the CPU it may use, its cgroup's throttling and the host's CPU
// pressure.
type threadMetrics struct{}

var (
	roleCPUDesc = prometheus.NewDesc("pipetop_run_threads_cpu_cores",
		"Cores the run's threads of a role used over the last refresh (schedstat run time).", []string{"role"}, nil)
	roleWaitDesc = prometheus.NewDesc("pipetop_run_threads_runqueue_wait_cores",
		"Threads of a role runnable but waiting for a CPU over the last refresh, on average (schedstat run-queue delay).", []string{"role"}, nil)
	roleCountDesc = prometheus.NewDesc("pipetop_run_threads",
		"Threads of the run by role.", []string{"role"}, nil)
	usableDesc = prometheus.NewDesc("pipetop_run_usable_cores",
		"Cores the run may use: the trainer's affinity mask capped by its cgroup CPU quota.", nil, nil)
	quotaDesc = prometheus.NewDesc("pipetop_run_cpu_quota_cores",
		"The trainer's cgroup CPU quota in CPUs (no series without a limit).", nil, nil)
	periodsDesc = prometheus.NewDesc("pipetop_run_cpu_periods_total",
		"Enforcement periods of the trainer's cgroup CPU quota.", nil, nil)
	throttledDesc = prometheus.NewDesc("pipetop_run_cpu_throttled_periods_total",
		"Periods in which the trainer's cgroup ran out of its CPU quota.", nil, nil)
	throttledSecDesc = prometheus.NewDesc("pipetop_run_cpu_throttled_seconds_total",
		"Time the trainer's cgroup's tasks were held back by the CPU quota.", nil, nil)
	pressureDesc = prometheus.NewDesc("pipetop_host_cpu_pressure_seconds_total",
		"Time in which some (or all, kind=full) runnable tasks waited for a CPU (/proc/pressure/cpu).", []string{"kind"}, nil)
)

// Describe implements SourceMetrics.
func (threadMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{roleCPUDesc, roleWaitDesc, roleCountDesc, usableDesc, quotaDesc, periodsDesc, throttledDesc, throttledSecDesc, pressureDesc} {
		ch <- d
	}
}

// Emit implements SourceMetrics; nothing without a trainer.
func (threadMetrics) Emit(s *snapshot.Snapshot, e Emitter) {
	t := s.Threads
	if t == nil {
		return
	}
	for role, r := range t.ByRole() {
		e.Gauge(roleCPUDesc, r.CPU/100, role)
		e.Gauge(roleWaitDesc, r.Wait/100, role)
		e.Gauge(roleCountDesc, float64(r.Threads), role)
	}
	if t.UsableCores > 0 {
		e.Gauge(usableDesc, t.UsableCores)
	}
	if q := t.Quota; q.Version != 0 {
		if q.CPUs > 0 {
			e.Gauge(quotaDesc, q.CPUs)
		}
		e.Counter(periodsDesc, float64(q.Periods))
		e.Counter(throttledDesc, float64(q.Throttled))
		e.Counter(throttledSecDesc, q.ThrottledSeconds)
	}
	if p := t.Pressure; p != nil {
		e.Counter(pressureDesc, float64(p.SomeTotalUs)/1e6, "some")
		e.Counter(pressureDesc, float64(p.FullTotalUs)/1e6, "full")
	}
}
