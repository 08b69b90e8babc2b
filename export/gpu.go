package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// gpuMetrics are the gpu source's metrics: every device's readings and the
// trainer's memory on it.
type gpuMetrics struct{}

// Labels of every per-device metric: the NVML index (of the parent GPU
// for a MIG device), the MIG slot (empty for a full GPU), the device UUID
// and name, and the reading's
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
		Ratio, func(d *snapshot.Device) snapshot.Reading { return d.SMActivity }},
	{deviceDesc("pipetop_gpu_sm_occupancy_ratio", "Resident warps relative to the SMs' maximum (GPM SM_OCCUPANCY)."),
		Ratio, func(d *snapshot.Device) snapshot.Reading { return d.SMOccupancy }},
	{deviceDesc("pipetop_gpu_tensor_activity_ratio", "Share of time any tensor core was active (GPM ANY_TENSOR_UTIL)."),
		Ratio, func(d *snapshot.Device) snapshot.Reading { return d.TensorActive }},
	{deviceDesc("pipetop_gpu_dram_activity_ratio", "DRAM bandwidth used as a share of the peak (GPM DRAM_BW_UTIL)."),
		Ratio, func(d *snapshot.Device) snapshot.Reading { return d.DRAMActive }},
	{deviceDesc("pipetop_gpu_kernel_active_ratio", "Share of time at least one kernel was running (NVML utilization.gpu): not how hard the GPU worked."),
		Ratio, func(d *snapshot.Device) snapshot.Reading { return d.KernelActive }},
	{deviceDesc("pipetop_gpu_memory_active_ratio", "Share of time device memory was read or written (NVML utilization.memory)."),
		Ratio, func(d *snapshot.Device) snapshot.Reading { return d.MemActive }},
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
		Hertz, func(d *snapshot.Device) snapshot.Reading { return d.SMClock }},
	{deviceDesc("pipetop_gpu_memory_clock_hertz", "Current memory clock."),
		Hertz, func(d *snapshot.Device) snapshot.Reading { return d.MemClock }},
}

// trainerMemDesc is the trainer's own memory on a device; it carries the
// device and the trainer labels.
var trainerMemDesc = prometheus.NewDesc("pipetop_gpu_trainer_memory_used_bytes",
	"Device memory used by the trainer's process tree.",
	[]string{"gpu", "mig", "uuid", "name", "trainer", "pid", "source"}, nil)

// Describe implements SourceMetrics.
func (gpuMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range deviceMetrics {
		ch <- m.desc
	}
	ch <- trainerMemDesc
}

// Emit implements SourceMetrics: the readings of every device.
func (gpuMetrics) Emit(s *snapshot.Snapshot, e Emitter) {
	for i := range s.GPU.Devices {
		d := &s.GPU.Devices[i]
		mig := ""
		if d.MIG {
			mig = Itoa(d.MIGIndex)
		}
		id := []string{Itoa(d.Index), mig, d.UUID, d.Name}
		for _, m := range deviceMetrics {
			e.Reading(m.desc, m.get(d), m.unit, id...)
		}
		if s.Trainer != nil {
			e.Reading(trainerMemDesc, d.TrainerMem, nil, append(id, s.Trainer.Name, Itoa(s.Trainer.PID))...)
		}
	}
}
