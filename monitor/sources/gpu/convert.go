package gpu

import (
	mgpu "github.com/pipetop/pipetop/metrics/gpu"
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
