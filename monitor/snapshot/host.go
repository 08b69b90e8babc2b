package snapshot

import (
	"github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/host"
)

// GPU is every NVIDIA device, or the status saying why there is none.
type GPU struct {
	// Status is empty when every reading worked, else one line such as
	// "no NVIDIA driver (libnvidia-ml.so.1 not found)".
	Status  string   `json:"status"`
	Driver  string   `json:"driver,omitempty"`
	Devices []Device `json:"devices"`
}

// Device is one GPU or MIG device. Percentages are 0..100, memory in bytes,
// power in W, temperature in °C, clocks in MHz, PCIe in bytes/s.
type Device struct {
	Index        int      `json:"index"`
	MIG          bool     `json:"mig"`
	MIGIndex     int      `json:"mig_index"`
	Name         string   `json:"name"`
	UUID         string   `json:"uuid"`
	Err          string   `json:"error,omitempty"`
	KernelActive Reading  `json:"kernel_active"`
	MemActive    Reading  `json:"mem_active"`
	SMActivity   Reading  `json:"sm_activity"`
	SMOccupancy  Reading  `json:"sm_occupancy"`
	TensorActive Reading  `json:"tensor_active"`
	DRAMActive   Reading  `json:"dram_active"`
	MemUsed      Reading  `json:"mem_used"`
	MemTotal     Reading  `json:"mem_total"`
	Power        Reading  `json:"power"`
	PowerLimit   Reading  `json:"power_limit"`
	Temperature  Reading  `json:"temperature"`
	SMClock      Reading  `json:"sm_clock"`
	MemClock     Reading  `json:"mem_clock"`
	PCIeRx       Reading  `json:"pcie_rx"`
	PCIeTx       Reading  `json:"pcie_tx"`
	Throttle     []string `json:"throttle"`
	// TrainerMem is the trainer's own device memory (bytes), summed over
	// its process tree; missing when it does not use this device.
	TrainerMem Reading `json:"trainer_mem"`
}

// FromGPU converts a GPU sampler snapshot.
func FromGPU(s gpu.Snapshot) GPU {
	g := GPU{Status: s.Status, Driver: s.DriverVersion, Devices: make([]Device, 0, len(s.Devices))}
	for _, d := range s.Devices {
		g.Devices = append(g.Devices, fromDevice(d))
	}
	return g
}

func fromDevice(d gpu.Device) Device {
	out := Device{Index: d.Index, MIG: d.MIG, MIGIndex: d.MIGIndex, Name: d.Name, UUID: d.UUID, Err: d.Err,
		KernelActive: Read(d.KernelActive), MemActive: Read(d.MemActive),
		SMActivity: Read(d.SMActivity), SMOccupancy: Read(d.SMOccupancy),
		TensorActive: Read(d.TensorActive), DRAMActive: Read(d.DRAMActive),
		MemUsed: Read(d.MemUsed), MemTotal: Read(d.MemTotal),
		Power: Read(d.Power), PowerLimit: Read(d.PowerLimit), Temperature: Read(d.Temperature),
		SMClock: Read(d.SMClock), MemClock: Read(d.MemClock), PCIeRx: Read(d.PCIeRx), PCIeTx: Read(d.PCIeTx),
		Throttle:   d.Throttle.Reasons.Names(),
		TrainerMem: Reading{Source: gpu.SourceProcessList, State: "missing"},
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
		out.TrainerMem = Reading{Value: &sum, Source: gpu.SourceProcessList, State: "ok"}
	}
	return out
}

// CPU is the machine's cores and memory. Percentages are 0..100, memory in
// bytes.
type CPU struct {
	Total     Reading   `json:"total"`
	Cores     []Reading `json:"cores"`
	Load1     Reading   `json:"load1"`
	Load5     Reading   `json:"load5"`
	Load15    Reading   `json:"load15"`
	MemTotal  Reading   `json:"mem_total"`
	MemUsed   Reading   `json:"mem_used"`
	SwapTotal Reading   `json:"swap_total"`
	SwapUsed  Reading   `json:"swap_used"`
}

// FromCPU converts a CPU sampler snapshot.
func FromCPU(s host.CPUSnapshot) CPU {
	c := CPU{Total: Read(s.Total), Cores: make([]Reading, len(s.Cores)),
		Load1: Read(s.Load1), Load5: Read(s.Load5), Load15: Read(s.Load15),
		MemTotal: Read(s.MemTotal), MemUsed: Read(s.MemUsed),
		SwapTotal: Read(s.SwapTotal), SwapUsed: Read(s.SwapUsed)}
	for i, v := range s.Cores {
		c.Cores[i] = Read(v)
	}
	return c
}

// Process is the trainer process and its descendants (loader workers).
type Process struct {
	Alive     bool   `json:"alive"`
	Self      Proc   `json:"self"`
	Children  []Proc `json:"children"`
	Truncated bool   `json:"truncated"`
}

// Proc is one process. CPU is % of one core (above 100 with several busy
// threads), RSS bytes, IO bytes/s.
type Proc struct {
	PID       int     `json:"pid"`
	PPID      int     `json:"ppid"`
	Comm      string  `json:"comm"`
	User      string  `json:"user,omitempty"`
	CPU       Reading `json:"cpu"`
	RSS       Reading `json:"rss"`
	Threads   Reading `json:"threads"`
	ReadRate  Reading `json:"read_rate"`
	WriteRate Reading `json:"write_rate"`
}

// FromProc converts a process sampler snapshot.
func FromProc(s host.ProcSnapshot) *Process {
	p := &Process{Alive: s.Alive, Self: fromProcInfo(s.Process), Truncated: s.Truncated,
		Children: make([]Proc, len(s.Children))}
	for i, c := range s.Children {
		p.Children[i] = fromProcInfo(c)
	}
	return p
}

func fromProcInfo(p host.ProcInfo) Proc {
	return Proc{PID: p.PID, PPID: p.PPID, Comm: p.Comm, User: p.User, CPU: Read(p.CPU), RSS: Read(p.RSS),
		Threads: Read(p.Threads), ReadRate: Read(p.ReadRate), WriteRate: Read(p.WriteRate)}
}
