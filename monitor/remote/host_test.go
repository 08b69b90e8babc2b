package remote

import (
	"testing"

	"github.com/pipetop/pipetop/metrics/gpumetric"
)

// TestHostReadings: the exporter's host series, as Prometheus returns them,
// become the CPU and GPU parts in snapshot units (ratios to percent, Hz to
// MHz); absent readings stay missing, never a made-up 0.
func TestHostReadings(t *testing.T) {
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	vec := []Sample{
		{Labels: l("__name__", "pipetop_host_cpu_busy_ratio", "cpu", "0", "source", "proc_stat"), V: 0.5},
		{Labels: l("__name__", "pipetop_host_cpu_busy_ratio", "cpu", "2", "source", "proc_stat"), V: 1},
		{Labels: l("__name__", "pipetop_host_load1", "source", "loadavg"), V: 3},
		{Labels: l("__name__", "pipetop_host_memory_used_bytes"), V: 1 << 30},
		{Labels: l("__name__", "pipetop_gpu_kernel_active_ratio", "gpu", "1", "uuid", "GPU-b", "name", "H200"), V: 0.25},
		{Labels: l("__name__", "pipetop_gpu_sm_clock_hertz", "gpu", "1", "uuid", "GPU-b"), V: 1.98e9},
		{Labels: l("__name__", "pipetop_gpu_memory_used_bytes", "gpu", "0", "uuid", "GPU-a"), V: 42},
		{Labels: l("__name__", "pipetop_gpu_power_watts", "gpu", "0"), V: 1}, // no uuid: skipped
	}
	c := cpuOf(vec)
	if len(c.Cores) != 3 || c.Cores[0].Or(-1) != 50 || c.Cores[1].OK() || c.Cores[2].Or(-1) != 100 || c.Total.Or(-1) != 75 {
		t.Errorf("cores %+v total %+v; want 50, missing, 100 and 75", c.Cores, c.Total)
	}
	if c.Load1.Or(-1) != 3 || c.Load1.Source != "loadavg" || c.MemUsed.Or(-1) != 1<<30 || c.Load5.OK() || c.SwapUsed.OK() {
		t.Errorf("host readings %+v", c)
	}
	g := gpuOf(vec)
	if len(g.Devices) != 2 || g.Devices[0].UUID != "GPU-a" || g.Devices[1].Name != "H200" {
		t.Fatalf("devices %+v, want GPU-a then GPU-b (H200)", g.Devices)
	}
	b := g.Devices[1]
	if b.Readings[gpumetric.KernelActive].Or(-1) != 25 || b.Readings[gpumetric.SMClock].Or(-1) != 1980 || b.Readings[gpumetric.MemUsed].OK() || b.MIG {
		t.Errorf("GPU-b %+v", b)
	}
	if g.Devices[0].Readings[gpumetric.MemUsed].Or(-1) != 42 || g.Devices[0].Readings[gpumetric.Power].OK() {
		t.Errorf("GPU-a %+v", g.Devices[0])
	}
}
