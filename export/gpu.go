package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/metrics/gpumetric"
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

// deviceDescs are the descriptions of the readings the exporter serves,
// by gpumetric.ID (nil for one it does not serve).
var deviceDescs = func() (d [gpumetric.N]*prometheus.Desc) {
	for id, m := range gpumetric.Table {
		if m.Prom != "" {
			d[id] = deviceDesc(m.Prom, m.Help)
		}
	}
	return d
}()

// trainerMemDesc is the trainer's own memory on a device; it carries the
// device and the trainer labels.
var trainerMemDesc = prometheus.NewDesc("pipetop_gpu_trainer_memory_used_bytes",
	"Device memory used by the trainer's process tree.",
	[]string{"gpu", "mig", "uuid", "name", "trainer", "pid", "source"}, nil)

// Describe implements SourceMetrics.
func (gpuMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range deviceDescs {
		if d != nil {
			ch <- d
		}
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
		for i, desc := range deviceDescs {
			if desc != nil {
				e.Reading(desc, d.Readings[i], gpumetric.Table[i].Unit.Export, id...)
			}
		}
		if s.Trainer != nil {
			e.Reading(trainerMemDesc, d.TrainerMem, nil, append(id, s.Trainer.Name, Itoa(s.Trainer.PID))...)
		}
	}
}
