package remote

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// readHost sets s's CPU and GPU parts from what the chosen rank's
// exporter serves about its host.
func (v *View) readHost(ctx context.Context, s *snapshot.Snapshot, r *rankData) error {
	q := `{__name__=~"pipetop_host_.*|pipetop_gpu_.*",instance=` + quote(r.instance) + `,job=` + quote(r.job) + `}`
	vec, err := v.c.Query(ctx, q, s.Time)
	if err != nil {
		return err
	}
	s.CPU = cpuOf(vec)
	s.GPU = gpuOf(vec)
	if len(s.GPU.Devices) == 0 {
		s.GPU.Status = fmt.Sprintf("no GPU readings from %s's exporter (%s)", cmpOr(r.host, r.instance), r.instance)
	}
	return nil
}

// reading is a value from the server, already in snapshot units.
func reading(v float64, source string) snapshot.Reading {
	return snapshot.Reading{Value: &v, Source: source, State: "ok"}
}

// missing is a reading the exporter did not serve.
var missing = snapshot.Reading{State: "missing"}

// cpuOf reads the host's cores, load and memory.
func cpuOf(vec []Sample) snapshot.CPU {
	c := snapshot.CPU{Total: missing, Load1: missing, Load5: missing, Load15: missing,
		MemTotal: missing, MemUsed: missing, SwapTotal: missing, SwapUsed: missing}
	cores := map[int]snapshot.Reading{}
	n := 0
	host := map[string]*snapshot.Reading{
		"pipetop_host_load1": &c.Load1, "pipetop_host_load5": &c.Load5, "pipetop_host_load15": &c.Load15,
		"pipetop_host_memory_total_bytes": &c.MemTotal, "pipetop_host_memory_used_bytes": &c.MemUsed,
		"pipetop_host_swap_total_bytes": &c.SwapTotal, "pipetop_host_swap_used_bytes": &c.SwapUsed,
	}
	for _, s := range vec {
		name := s.Labels["__name__"]
		if p, ok := host[name]; ok {
			*p = reading(s.V, s.Labels["source"])
			continue
		}
		if name != "pipetop_host_cpu_busy_ratio" {
			continue
		}
		i, err := strconv.Atoi(s.Labels["cpu"])
		if err != nil || i < 0 || i > 4096 {
			continue
		}
		cores[i] = reading(100*s.V, s.Labels["source"])
		n = max(n, i+1)
	}
	c.Cores = make([]snapshot.Reading, n)
	sum, known := 0.0, 0
	for i := range c.Cores {
		c.Cores[i] = missing
		if r, ok := cores[i]; ok {
			c.Cores[i] = r
			sum += *r.Value
			known++
		}
	}
	if known > 0 {
		c.Total = reading(sum/float64(known), "prometheus")
	}
	return c
}

// gpuMetrics maps the exporter's per-device metrics to device readings and
// their scale (ratios to percent).
var gpuMetrics = map[string]struct {
	get   func(*snapshot.Device) *snapshot.Reading
	scale float64
}{
	"pipetop_gpu_kernel_active_ratio":   {func(d *snapshot.Device) *snapshot.Reading { return &d.KernelActive }, 100},
	"pipetop_gpu_memory_active_ratio":   {func(d *snapshot.Device) *snapshot.Reading { return &d.MemActive }, 100},
	"pipetop_gpu_sm_activity_ratio":     {func(d *snapshot.Device) *snapshot.Reading { return &d.SMActivity }, 100},
	"pipetop_gpu_sm_occupancy_ratio":    {func(d *snapshot.Device) *snapshot.Reading { return &d.SMOccupancy }, 100},
	"pipetop_gpu_tensor_activity_ratio": {func(d *snapshot.Device) *snapshot.Reading { return &d.TensorActive }, 100},
	"pipetop_gpu_dram_activity_ratio":   {func(d *snapshot.Device) *snapshot.Reading { return &d.DRAMActive }, 100},
	"pipetop_gpu_memory_used_bytes":     {func(d *snapshot.Device) *snapshot.Reading { return &d.MemUsed }, 1},
	"pipetop_gpu_memory_total_bytes":    {func(d *snapshot.Device) *snapshot.Reading { return &d.MemTotal }, 1},
	"pipetop_gpu_power_watts":           {func(d *snapshot.Device) *snapshot.Reading { return &d.Power }, 1},
	"pipetop_gpu_power_limit_watts":     {func(d *snapshot.Device) *snapshot.Reading { return &d.PowerLimit }, 1},
	"pipetop_gpu_temperature_celsius":   {func(d *snapshot.Device) *snapshot.Reading { return &d.Temperature }, 1},
	"pipetop_gpu_sm_clock_hertz":        {func(d *snapshot.Device) *snapshot.Reading { return &d.SMClock }, 1e-6},
	"pipetop_gpu_memory_clock_hertz":    {func(d *snapshot.Device) *snapshot.Reading { return &d.MemClock }, 1e-6},
}

// gpuOf reads the host's devices, by UUID, in index order.
func gpuOf(vec []Sample) snapshot.GPU {
	devs := map[string]*snapshot.Device{}
	for _, s := range vec {
		m, ok := gpuMetrics[s.Labels["__name__"]]
		uuid := s.Labels["uuid"]
		if !ok || uuid == "" {
			continue
		}
		d := devs[uuid]
		if d == nil {
			d = newDevice(s.Labels)
			devs[uuid] = d
		}
		*m.get(d) = reading(s.V*m.scale, s.Labels["source"])
	}
	g := snapshot.GPU{Devices: make([]snapshot.Device, 0, len(devs))}
	for _, d := range devs {
		g.Devices = append(g.Devices, *d)
	}
	sort.Slice(g.Devices, func(i, j int) bool {
		a, b := g.Devices[i], g.Devices[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.MIGIndex < b.MIGIndex
	})
	return g
}

// newDevice is a device with every reading missing, named by its labels.
func newDevice(l map[string]string) *snapshot.Device {
	d := &snapshot.Device{Name: l["name"], UUID: l["uuid"], MIGIndex: -1, Throttle: []string{}}
	d.Index, _ = strconv.Atoi(l["gpu"])
	if mig, err := strconv.Atoi(l["mig"]); err == nil {
		d.MIG, d.MIGIndex = true, mig
	}
	for _, m := range gpuMetrics {
		*m.get(d) = missing
	}
	d.TrainerMem = missing
	return d
}
