package tui

import (
	"time"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/source"
	cpusrc "github.com/pipetop/pipetop/monitor/sources/cpu"
	gpusrc "github.com/pipetop/pipetop/monitor/sources/gpu"
	"github.com/pipetop/pipetop/monitor/sources/procs"
)

// The samplers below are FAKES: fixed host readings so that golden views
// do not depend on the machine running the tests. The trainer side of the
// views is real: frames recorded from the synthetic publisher.

// fakeSources are the registered sources over the fake samplers.
func fakeSources(cores int, noDriver bool) []source.Source {
	return []source.Source{cpusrc.New(&fakeCPU{n: cores}), procs.New(&fakeProc{}), gpusrc.New(&fakeGPU{noDriver: noDriver}, nil)}
}

// fakeCPU reports n cores with a fixed load pattern and fixed memory.
type fakeCPU struct {
	n    int
	now  time.Time
	seen int
}

func (f *fakeCPU) Sample(now time.Time) error { f.now = now; f.seen++; return nil }

func (f *fakeCPU) Snapshot() host.CPUSnapshot {
	s := host.CPUSnapshot{Time: f.now, Cores: make([]metrics.Value, f.n)}
	var total float64
	for i := range s.Cores {
		v := float64((i*37+f.seen*11)%100) + 0.4
		s.Cores[i] = metrics.Of(v, host.SourceProcStat)
		total += v
	}
	s.Total = metrics.Of(total/float64(max(1, f.n)), host.SourceProcStat)
	s.Load1, s.Load5, s.Load15 = metrics.Of(1.92, host.SourceProcLoadavg), metrics.Of(1.5, host.SourceProcLoadavg), metrics.Of(1.2, host.SourceProcLoadavg)
	s.MemTotal = metrics.Of(24*(1<<30), host.SourceProcMeminfo)
	s.MemUsed = metrics.Of(9.5*(1<<30), host.SourceProcMeminfo)
	s.MemAvailable = metrics.Of(14.5*(1<<30), host.SourceProcMeminfo)
	s.SwapTotal, s.SwapUsed = metrics.Of(0, host.SourceProcMeminfo), metrics.Of(0, host.SourceProcMeminfo)
	return s
}

// fakeProc reports a trainer with three loader workers.
type fakeProc struct {
	pid int
	now time.Time
}

func (f *fakeProc) SetPID(pid int)             { f.pid = pid }
func (f *fakeProc) Sample(now time.Time) error { f.now = now; return nil }

func (f *fakeProc) Snapshot() host.ProcSnapshot {
	p := func(pid int, comm string, cpu, rss, thr float64) host.ProcInfo {
		return host.ProcInfo{PID: pid, PPID: f.pid, Comm: comm, CPU: metrics.Of(cpu, host.SourceProcPIDStat),
			RSS: metrics.Of(rss, host.SourceProcPIDStat), Threads: metrics.Of(thr, host.SourceProcPIDStat)}
	}
	return host.ProcSnapshot{Time: f.now, Alive: true, Process: p(f.pid, "pipetrain", 103, 1.2*(1<<30), 14),
		Children: []host.ProcInfo{p(f.pid+1, "loader-0", 97, 300<<20, 1), p(f.pid+2, "loader-1", 95, 310<<20, 1),
			p(f.pid+3, "loader-2", 12, 290<<20, 1), p(f.pid+4, "sh", 0, 2<<20, 1)}}
}

// fakeGPU reports either one Hopper-class device with GPM readings, or no
// driver at all.
type fakeGPU struct {
	noDriver bool
	now      time.Time
	pids     []int
}

func (f *fakeGPU) SetPIDs(pids ...int)        { f.pids = pids }
func (f *fakeGPU) Sample(now time.Time) error { f.now = now; return nil }

func (f *fakeGPU) Snapshot() gpu.Snapshot {
	if f.noDriver {
		return gpu.Snapshot{Time: f.now, Status: "no NVIDIA driver (libnvidia-ml.so.1 not found)"}
	}
	d := gpu.Device{Index: 0, MIGIndex: -1, GPUInstance: -1, ComputeInstance: -1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-fake",
		KernelActive: metrics.Of(100, gpu.SourceKernelActive), MemActive: metrics.Of(31, gpu.SourceMemActive),
		SMActivity: metrics.Of(63, gpu.SourceGPM), SMOccupancy: metrics.Of(41, gpu.SourceGPM),
		TensorActive: metrics.Of(22, gpu.SourceGPM), DRAMActive: metrics.Of(18, gpu.SourceGPM),
		MemUsed: metrics.Of(41.2*(1<<30), gpu.SourceNVML), MemTotal: metrics.Of(80*(1<<30), gpu.SourceNVML),
		Power: metrics.Of(312, gpu.SourceNVML), PowerLimit: metrics.Of(700, gpu.SourceNVML),
		Temperature: metrics.Of(62, gpu.SourceNVML), SMClock: metrics.Of(1980, gpu.SourceNVML), MemClock: metrics.Of(2619, gpu.SourceNVML),
		PCIeRx: metrics.Of(1.2e9, gpu.SourceNVML), PCIeTx: metrics.Of(3e8, gpu.SourceNVML),
		Throttle: gpu.Throttle{Reasons: 0x4, Source: gpu.SourceNVML, State: metrics.OK}}
	for _, pid := range f.pids {
		d.Processes = append(d.Processes, gpu.Process{PID: pid, OnGPU: true, Memory: metrics.Of(12.3*(1<<30), gpu.SourceProcessList)})
	}
	return gpu.Snapshot{Time: f.now, DriverVersion: "550.54.15", Devices: []gpu.Device{d}}
}
