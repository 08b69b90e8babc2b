package remote

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/pipetop/pipetop/metrics/gpumetric"
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

// gpuOf reads the host's devices, by UUID, in index order.
func gpuOf(vec []Sample) snapshot.GPU {
	devs := map[string]*snapshot.Device{}
	for _, s := range vec {
		id, ok := gpumetric.ByProm(s.Labels["__name__"])
		uuid := s.Labels["uuid"]
		if !ok || uuid == "" {
			continue
		}
		d := devs[uuid]
		if d == nil {
			d = newDevice(s.Labels)
			devs[uuid] = d
		}
		d.Readings[id] = reading(gpumetric.Table[id].Unit.Import(s.V), s.Labels["source"])
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
	for id := range d.Readings {
		d.Readings[id] = missing
	}
	d.TrainerMem = missing
	return d
}
