package gpu

import (
	mgpu "github.com/pipetop/pipetop/metrics/gpu"
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
		KernelActive: snapshot.Read(d.KernelActive), MemActive: snapshot.Read(d.MemActive),
		SMActivity: snapshot.Read(d.SMActivity), SMOccupancy: snapshot.Read(d.SMOccupancy),
		TensorActive: snapshot.Read(d.TensorActive), DRAMActive: snapshot.Read(d.DRAMActive),
		MemUsed: snapshot.Read(d.MemUsed), MemTotal: snapshot.Read(d.MemTotal),
		Power: snapshot.Read(d.Power), PowerLimit: snapshot.Read(d.PowerLimit), Temperature: snapshot.Read(d.Temperature),
		SMClock: snapshot.Read(d.SMClock), MemClock: snapshot.Read(d.MemClock), PCIeRx: snapshot.Read(d.PCIeRx), PCIeTx: snapshot.Read(d.PCIeTx),
		Throttle:   d.Throttle.Reasons.Names(),
		TrainerMem: snapshot.Reading{Source: mgpu.SourceProcessList, State: "missing"},
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
	h.GPUMemUsed, h.GPUMemTotal = d.MemUsed.Or(0), d.MemTotal.Or(0)
	switch {
	case d.SMActivity.OK():
		h.GPUActivity, h.GPUActivitySource = d.SMActivity.Or(0)/100, "GPM"
	case d.KernelActive.OK():
		h.GPUActivity, h.GPUActivitySource = d.KernelActive.Or(0)/100, "kernel-active"
	}
	if d.MemUsed.OK() {
		h.GPUMem.Add(s.Time.UnixNano(), d.MemUsed.Or(0))
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
