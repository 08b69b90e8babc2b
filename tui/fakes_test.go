package tui

import (
	"fmt"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/source"
	cpusrc "github.com/pipetop/pipetop/monitor/sources/cpu"
	gpusrc "github.com/pipetop/pipetop/monitor/sources/gpu"
	"github.com/pipetop/pipetop/monitor/sources/gpuprocs"
	"github.com/pipetop/pipetop/monitor/sources/procs"
)

// The samplers below are FAKES: fixed host readings so that golden views
// do not depend on the machine running the tests. The trainer side of the
// views is real: frames recorded from the synthetic publisher.

// fakeSources are the registered sources over the fake samplers: gpus
// devices (0: no driver).
func fakeSources(cores, gpus int) []source.Source {
	g := &fakeGPU{n: gpus}
	return []source.Source{cpusrc.New(&fakeCPU{n: cores}), procs.New(&fakeProc{}), gpusrc.New(g, nil),
		gpuprocs.New(g, fakePIDs{g}, false)}
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
		return host.ProcInfo{PID: pid, PPID: f.pid, Comm: comm, User: "alice", CPU: metrics.Of(cpu, host.SourceProcPIDStat),
			RSS: metrics.Of(rss, host.SourceProcPIDStat), Threads: metrics.Of(thr, host.SourceProcPIDStat)}
	}
	return host.ProcSnapshot{Time: f.now, Alive: true, Process: p(f.pid, "pipetrain", 103, 1.2*(1<<30), 14),
		Children: []host.ProcInfo{p(f.pid+1, "loader-0", 97, 300<<20, 1), p(f.pid+2, "loader-1", 95, 310<<20, 1),
			p(f.pid+3, "loader-2", 12, 290<<20, 1), p(f.pid+4, "sh", 0, 2<<20, 1)}}
}

// fakeGPU reports n devices (0: no driver): Hopper-class with GPM
// readings; with 8, GPU 3 is in MIG mode with two instances. The trainer
// runs on GPUs 0 and 1; other users' processes share the devices.
type fakeGPU struct {
	n    int
	now  time.Time
	pids []int
}

func (f *fakeGPU) SetPIDs(pids ...int)        { f.pids = pids }
func (f *fakeGPU) Sample(now time.Time) error { f.now = now; return nil }

func (f *fakeGPU) Snapshot() gpu.Snapshot {
	if f.n == 0 {
		return gpu.Snapshot{Time: f.now, Status: "no NVIDIA driver (libnvidia-ml.so.1 not found)"}
	}
	s := gpu.Snapshot{Time: f.now, DriverVersion: "550.54.15"}
	for i := range f.n {
		d := f.device(i)
		s.Devices = append(s.Devices, d)
		if f.n == 8 && i == 3 {
			for j := range 2 {
				s.Devices = append(s.Devices, gpu.Device{Index: 3, MIG: true, MIGIndex: j, GPUInstance: j + 1, ComputeInstance: 0,
					Name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", UUID: fmt.Sprintf("MIG-fake-%d", j),
					Readings: [gpumetric.N]metrics.Value{gpumetric.MemUsed: metrics.Of(float64(5+10*j)*(1<<30), gpu.SourceNVML),
						gpumetric.MemTotal:     metrics.Of(40*(1<<30), gpu.SourceNVML),
						gpumetric.KernelActive: metrics.Unsupported(gpu.SourceKernelActive), gpumetric.SMActivity: metrics.Unsupported(gpu.SourceGPM)}})
			}
		}
	}
	return s
}

// device is GPU i; GPU 0 has the readings the single-GPU views show.
func (f *fakeGPU) device(i int) gpu.Device {
	load := float64((i*29 + 63) % 100)
	d := gpu.Device{Index: i, MIGIndex: -1, GPUInstance: -1, ComputeInstance: -1, Name: "NVIDIA H100 80GB HBM3", UUID: fmt.Sprintf("GPU-fake-%d", i),
		Readings: [gpumetric.N]metrics.Value{
			gpumetric.KernelActive: metrics.Of(100, gpu.SourceKernelActive), gpumetric.MemActive: metrics.Of(31, gpu.SourceMemActive),
			gpumetric.SMActivity: metrics.Of(load, gpu.SourceGPM), gpumetric.SMOccupancy: metrics.Of(41, gpu.SourceGPM),
			gpumetric.TensorActive: metrics.Of(22, gpu.SourceGPM), gpumetric.DRAMActive: metrics.Of(18, gpu.SourceGPM),
			gpumetric.MemUsed: metrics.Of((41.2+float64(i))*(1<<30), gpu.SourceNVML), gpumetric.MemTotal: metrics.Of(80*(1<<30), gpu.SourceNVML),
			gpumetric.Power: metrics.Of(312+float64(10*i), gpu.SourceNVML), gpumetric.PowerLimit: metrics.Of(700, gpu.SourceNVML),
			gpumetric.Temperature: metrics.Of(62+float64(i), gpu.SourceNVML), gpumetric.SMClock: metrics.Of(1980, gpu.SourceNVML),
			gpumetric.MemClock: metrics.Of(2619, gpu.SourceNVML), gpumetric.PCIeRx: metrics.Of(1.2e9, gpu.SourceNVML), gpumetric.PCIeTx: metrics.Of(3e8, gpu.SourceNVML)},
		Throttle: gpu.Throttle{Reasons: 0x4, Source: gpu.SourceNVML, State: metrics.OK},
		ProcList: metrics.OK, ProcUtil: metrics.OK}
	run := func(pid, mig int, gib, sm float64) gpu.RunningProcess {
		return gpu.RunningProcess{PID: pid, MIGIndex: mig, Compute: true, Memory: metrics.Of(gib*(1<<30), gpu.SourceProcessList),
			SMUtil: metrics.Of(sm, gpu.SourceProcessUtil), MemUtil: metrics.Of(sm/2, gpu.SourceProcessUtil)}
	}
	if i < 2 {
		for _, pid := range f.pids {
			d.Processes = append(d.Processes, gpu.Process{PID: pid, OnGPU: true, Memory: metrics.Of(12.3*(1<<30), gpu.SourceProcessList)})
			d.Running = append(d.Running, run(pid, -1, 12.3, 40))
		}
	}
	d.Running = append(d.Running, run(40000+i, -1, 20+float64(i), 20))
	if f.n == 8 && i == 3 {
		d.Running = append(d.Running, run(41000, 0, 4, 0), run(41001, 1, 14, 0))
	}
	return d
}

// fakePIDs is a FAKE /proc for the fake GPU processes: the trainer is
// alice's, the others bob's and carol's.
type fakePIDs struct{ g *fakeGPU }

func (f fakePIDs) Read(_ time.Time, pids []int) []host.PIDInfo {
	out := make([]host.PIDInfo, len(pids))
	for i, pid := range pids {
		p := host.PIDInfo{PID: pid, NSPID: pid, UID: 1000, User: "alice", Comm: "pipetrain", Cmdline: "pipetrain train --data demo.zarr",
			CPU: metrics.Of(103, host.SourceProcPIDStat), RSS: metrics.Of(1.2*(1<<30), host.SourceProcPIDStat),
			Age: metrics.Of(754, host.SourceProcUptime), Vis: host.Visible}
		if pid >= 40000 {
			p.UID, p.User, p.Comm = 1001+pid%2, []string{"bob", "carol"}[pid%2], "python3"
			p.Cmdline = fmt.Sprintf("python3 -m jupyter kernel --id %d", pid)
			p.CPU, p.RSS, p.Age = metrics.Of(float64(pid%7), host.SourceProcPIDStat), metrics.Of(float64(pid%5+1)*(1<<30), host.SourceProcPIDStat), metrics.Of(float64(pid%90000), host.SourceProcUptime)
		}
		out[i] = p
	}
	return out
}

// fakeSignals is a FAKE signaler that records instead of sending: the
// fake processes' pids may exist on the test machine. The real one is
// tested in monitor/signal and end to end in cmd/pipetop.
type fakeSignals struct{ sent []string }

func (f *fakeSignals) Check(int) error { return nil }

func (f *fakeSignals) Signal(pid int, sig syscall.Signal) error {
	f.sent = append(f.sent, fmt.Sprintf("%v %d", sig, pid))
	return nil
}
