package gpu

import (
	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// fromSampler converts a GPU sampler snapshot.
func fromSampler(s mgpu.Snapshot) snapshot.GPU {
	g := snapshot.GPU{Status: s.Status, Driver: s.DriverVersion, Devices: make([]snapshot.Device, 0, len(s.Devices))}
	for _, d := range s.Devices {
		g.Devices = append(g.Devices, fromDevice(d))
	}
	return g
}

func fromDevice(d mgpu.Device) snapshot.Device {
	out := snapshot.Device{Index: d.Index, MIG: d.MIG, MIGIndex: d.MIGIndex, Name: d.Name, UUID: d.UUID, Err: d.Err,
		Throttle:   d.Throttle.Reasons.Names(),
		TrainerMem: snapshot.Reading{Source: mgpu.SourceProcessList, State: "missing"},
	}
	for id, v := range d.Readings {
		out.Readings[id] = snapshot.Read(v)
	}
	if out.Throttle == nil {
		out.Throttle = []string{}
	}
	var sum float64
	var any bool
	for _, p := range d.Processes {
		if p.OnGPU && p.Memory.Valid() {
			sum += p.Memory.V
			any = true
		}
	}
	if any {
		out.TrainerMem = snapshot.Reading{Value: &sum, Source: mgpu.SourceProcessList, State: "ok"}
	}
	return out
}

// FillHost implements source.HostFiller: the memory and activity of the
// device the trainer's processes hold memory on (the one holding most),
// and its used memory at s.Time for the memory-creep rule; nothing without
// one.
func (part) FillHost(s *snapshot.Snapshot, h *verdict.Host) {
	d := trainerDevice(s)
	if d == nil {
		return
	}
	r := &d.Readings
	h.GPUMemUsed, h.GPUMemTotal = r[gpumetric.MemUsed].Or(0), r[gpumetric.MemTotal].Or(0)
	switch {
	case r[gpumetric.SMActivity].OK():
		h.GPUActivity, h.GPUActivitySource = r[gpumetric.SMActivity].Or(0)/100, "GPM"
	case r[gpumetric.KernelActive].OK():
		h.GPUActivity, h.GPUActivitySource = r[gpumetric.KernelActive].Or(0)/100, "kernel-active"
	}
	if r[gpumetric.MemUsed].OK() {
		h.GPUMem.Add(s.Time.UnixNano(), r[gpumetric.MemUsed].Or(0))
	}
}

// trainerDevice is the GPU the trainer's processes hold memory on (the
// one holding most), or nil.
func trainerDevice(s *snapshot.Snapshot) *snapshot.Device {
	var best *snapshot.Device
	for i := range s.GPU.Devices {
		d := &s.GPU.Devices[i]
		if d.TrainerMem.OK() && (best == nil || d.TrainerMem.Or(0) > best.TrainerMem.Or(0)) {
			best = d
		}
	}
	return best
}
