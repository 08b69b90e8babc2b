// Package gpu is the monitor's source for NVIDIA devices (metrics/gpu over
// NVML, with GPM where the device has it) and the trainer's use of them.
package gpu

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// Sampler reads the GPUs (metrics/gpu.Sampler).
type Sampler interface {
	SetPIDs(pids ...int)
	Sample(now time.Time) error
	Snapshot() mgpu.Snapshot
}

// Source is the GPU source.
type Source struct {
	s     Sampler
	close func() error
	pids  []int
}

// New returns the GPU source over s; closeFn (nil: nothing) releases it.
func New(s Sampler, closeFn func() error) *Source {
	if closeFn == nil {
		closeFn = func() error { return nil }
	}
	return &Source{s: s, close: closeFn}
}

// Name implements source.Source.
func (g *Source) Name() string { return "gpu" }

// Sample implements source.Source: the target's pid is watched for its
// device memory.
func (g *Source) Sample(now time.Time, t source.Target) error {
	var pids []int
	if t.PID > 0 {
		pids = []int{t.PID}
	}
	if !slices.Equal(pids, g.pids) {
		g.pids = pids
		g.s.SetPIDs(pids...)
	}
	return g.s.Sample(now)
}

// Fill implements source.Source.
func (g *Source) Fill(s *snapshot.Snapshot) { s.GPU = snapshot.FromGPU(g.s.Snapshot()) }

// Close implements source.Source.
func (g *Source) Close() error { return g.close() }

// Labels of every per-device metric: the NVML index (of the parent GPU
// for a MIG device), the MIG slot (empty for a full GPU), the device UUID
// and name, and the reading's source.
var deviceLabels = []string{"gpu", "mig", "uuid", "name", "source"}

func deviceDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, deviceLabels, nil)
}

// deviceMetric is one per-device reading and its conversion to base
// units (nil: none).
type deviceMetric struct {
	desc *prometheus.Desc
	unit func(float64) float64
	get  func(*snapshot.Device) snapshot.Reading
}

var deviceMetrics = []deviceMetric{
	{deviceDesc("pipetop_gpu_sm_activity_ratio", "Share of SMs busy between two samples (GPM SM_UTIL, Hopper and later)."),
		source.Ratio, func(d *snapshot.Device) snapshot.Reading { return d.SMActivity }},
	{deviceDesc("pipetop_gpu_sm_occupancy_ratio", "Resident warps relative to the SMs' maximum (GPM SM_OCCUPANCY)."),
		source.Ratio, func(d *snapshot.Device) snapshot.Reading { return d.SMOccupancy }},
	{deviceDesc("pipetop_gpu_tensor_activity_ratio", "Share of time any tensor core was active (GPM ANY_TENSOR_UTIL)."),
		source.Ratio, func(d *snapshot.Device) snapshot.Reading { return d.TensorActive }},
	{deviceDesc("pipetop_gpu_dram_activity_ratio", "DRAM bandwidth used as a share of the peak (GPM DRAM_BW_UTIL)."),
		source.Ratio, func(d *snapshot.Device) snapshot.Reading { return d.DRAMActive }},
	{deviceDesc("pipetop_gpu_kernel_active_ratio", "Share of time at least one kernel was running (NVML utilization.gpu): not how hard the GPU worked."),
		source.Ratio, func(d *snapshot.Device) snapshot.Reading { return d.KernelActive }},
	{deviceDesc("pipetop_gpu_memory_active_ratio", "Share of time device memory was read or written (NVML utilization.memory)."),
		source.Ratio, func(d *snapshot.Device) snapshot.Reading { return d.MemActive }},
	{deviceDesc("pipetop_gpu_memory_used_bytes", "Device memory in use."),
		nil, func(d *snapshot.Device) snapshot.Reading { return d.MemUsed }},
	{deviceDesc("pipetop_gpu_memory_total_bytes", "Device memory in all."),
		nil, func(d *snapshot.Device) snapshot.Reading { return d.MemTotal }},
	{deviceDesc("pipetop_gpu_power_watts", "Power draw."),
		nil, func(d *snapshot.Device) snapshot.Reading { return d.Power }},
	{deviceDesc("pipetop_gpu_power_limit_watts", "Enforced power limit."),
		nil, func(d *snapshot.Device) snapshot.Reading { return d.PowerLimit }},
	{deviceDesc("pipetop_gpu_temperature_celsius", "GPU die temperature."),
		nil, func(d *snapshot.Device) snapshot.Reading { return d.Temperature }},
	{deviceDesc("pipetop_gpu_sm_clock_hertz", "Current SM clock."),
		source.Hertz, func(d *snapshot.Device) snapshot.Reading { return d.SMClock }},
	{deviceDesc("pipetop_gpu_memory_clock_hertz", "Current memory clock."),
		source.Hertz, func(d *snapshot.Device) snapshot.Reading { return d.MemClock }},
}

// trainerMemDesc is the trainer's own memory on a device; it carries the
// device and the trainer labels.
var trainerMemDesc = prometheus.NewDesc("pipetop_gpu_trainer_memory_used_bytes",
	"Device memory used by the trainer's process tree.",
	[]string{"gpu", "mig", "uuid", "name", "trainer", "pid", "source"}, nil)

// Describe implements source.Source.
func (g *Source) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range deviceMetrics {
		ch <- m.desc
	}
	ch <- trainerMemDesc
}

// Collect implements source.Source: the readings of every device.
func (g *Source) Collect(s *snapshot.Snapshot, e source.Emitter) {
	for i := range s.GPU.Devices {
		d := &s.GPU.Devices[i]
		mig := ""
		if d.MIG {
			mig = source.Itoa(d.MIGIndex)
		}
		id := []string{source.Itoa(d.Index), mig, d.UUID, d.Name}
		for _, m := range deviceMetrics {
			e.Reading(m.desc, m.get(d), m.unit, id...)
		}
		if s.Trainer != nil {
			e.Reading(trainerMemDesc, d.TrainerMem, nil, append(id, s.Trainer.Name, source.Itoa(s.Trainer.PID))...)
		}
	}
}
