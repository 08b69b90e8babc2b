package gpu

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpumetric"
)

// eightGPUs is a mocked 8-GPU box: GPU 3 is in MIG mode with two
// instances; 30 compute processes spread over the devices, one of them
// also a graphics process, one with its memory hidden by the driver.
func eightGPUs() []*fakeGPU {
	gpus := make([]*fakeGPU, 8)
	for i := range gpus {
		gpus[i] = hopper()
		gpus[i].uuid = "GPU-" + string(rune('a'+i))
	}
	gpus[3].migs = []*mock.Device{migDevice("MIG-0", 1), migDevice("MIG-1", 2)}
	for p := range 30 {
		g := gpus[p%8]
		info := nvml.ProcessInfo{Pid: uint32(1000 + p), UsedGpuMemory: uint64(p+1) << 28, GpuInstanceId: ^uint32(0), ComputeInstanceId: ^uint32(0)}
		if p%8 == 3 {
			info.GpuInstanceId, info.ComputeInstanceId = uint32(1+p%2), 0
		}
		g.procs = append(g.procs, info)
		g.pUtil = append(g.pUtil, nvml.ProcessUtilizationSample{Pid: info.Pid, SmUtil: uint32(p), MemUtil: uint32(p / 2), TimeStamp: 1})
	}
	gpus[0].gprocs = []nvml.ProcessInfo{{Pid: 1000, UsedGpuMemory: 1 << 28}, {Pid: 2000, UsedGpuMemory: valueNotAvailable}}
	return gpus
}

func TestRunningProcessesOnEightGPUs(t *testing.T) {
	gpus := eightGPUs()
	gpus[5].setFail("putil", nvml.ERROR_NOT_SUPPORTED) // a driver refusing per-process utilisation
	s := Open(newFakeLib(gpus...), Options{AllProcesses: true})
	if err := s.Sample(t0); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if len(snap.Devices) != 10 {
		t.Fatalf("%d devices, want 8 GPUs + 2 MIG devices", len(snap.Devices))
	}
	total := 0
	for _, d := range snap.Devices {
		if d.MIG {
			if len(d.Running) != 0 {
				t.Errorf("MIG device %d/%d lists %d processes; they belong on the parent", d.Index, d.MIGIndex, len(d.Running))
			}
			continue
		}
		if d.Err != "" {
			t.Errorf("GPU %d: %s", d.Index, d.Err)
		}
		total += len(d.Running)
		for _, p := range d.Running {
			switch {
			case d.Index == 3 && p.MIGIndex != (p.PID-1000)%2:
				t.Errorf("pid %d on the MIG GPU: slot %d, want %d", p.PID, p.MIGIndex, (p.PID-1000)%2)
			case d.Index != 3 && p.MIGIndex != -1:
				t.Errorf("pid %d on GPU %d: MIG slot %d outside MIG", p.PID, d.Index, p.MIGIndex)
			}
			if p.Compute && p.Memory != metrics.Of(float64(uint64(p.PID-1000+1)<<28), SourceProcessList) {
				t.Errorf("pid %d memory = %+v", p.PID, p.Memory)
			}
			if d.Index == 5 {
				want(t, "SM with utilisation refused", p.SMUtil, metrics.Unsupported(SourceProcessUtil))
			} else if p.Compute {
				want(t, "SM", p.SMUtil, metrics.Of(float64(p.PID-1000), SourceProcessUtil))
			}
		}
	}
	if total != 31 { // 30 compute processes + one graphics-only
		t.Errorf("%d processes listed, want 31", total)
	}
	if u := snap.Devices[7].ProcUtil; snap.Devices[7].Index != 5 || u != metrics.NotSupported {
		t.Errorf("GPU 5 ProcUtil = %v, want not supported", u)
	}
	r0 := snap.Devices[0].Running
	if !r0[0].Compute || !r0[0].Graphics || r0[0].PID != 1000 {
		t.Errorf("pid 1000 is compute and graphics: %+v", r0[0])
	}
	hidden := r0[len(r0)-1]
	if hidden.PID != 2000 || hidden.Memory != metrics.Unsupported(SourceProcessList) || hidden.Compute {
		t.Errorf("graphics process with hidden memory = %+v", hidden)
	}
}

// TestRunningListRefused: a driver refusing the process list marks the
// list failed without failing the device's own readings.
func TestRunningListRefused(t *testing.T) {
	g := ampere()
	g.setFail("procs", nvml.ERROR_NO_PERMISSION)
	s := Open(newFakeLib(g), Options{AllProcesses: true})
	if err := s.Sample(t0); err != nil {
		t.Fatalf("a refused process list failed the sample: %v", err)
	}
	d := s.Snapshot().Devices[0]
	if d.ProcList != metrics.Failed || d.Err != "" || !d.Readings[gpumetric.Power].Valid() {
		t.Errorf("ProcList = %v, Err = %q, power %+v", d.ProcList, d.Err, d.Readings[gpumetric.Power])
	}
}

// TestNoRunningListByDefault: without AllProcesses nothing is listed.
func TestNoRunningListByDefault(t *testing.T) {
	g := ampere()
	g.procs = []nvml.ProcessInfo{{Pid: 7, UsedGpuMemory: 1}}
	s := Open(newFakeLib(g), Options{})
	if err := s.Sample(t0); err != nil {
		t.Fatal(err)
	}
	if d := s.Snapshot().Devices[0]; len(d.Running) != 0 || d.ProcList != metrics.Missing {
		t.Errorf("Running = %+v, ProcList %v", d.Running, d.ProcList)
	}
}
