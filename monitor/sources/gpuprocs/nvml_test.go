package gpuprocs

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// mockDevice is a go-nvml mock GPU (no GPM) running procs; refuseUtil
// makes it refuse per-process utilisation; migs puts it in MIG mode.
func mockDevice(procs []nvml.ProcessInfo, refuseUtil bool, migs ...nvml.Device) *mock.Device {
	ok32 := func(v uint32) func() (uint32, nvml.Return) {
		return func() (uint32, nvml.Return) { return v, nvml.SUCCESS }
	}
	return &mock.Device{
		GetNameFunc:               func() (string, nvml.Return) { return "NVIDIA H100 80GB HBM3", nvml.SUCCESS },
		GetUUIDFunc:               func() (string, nvml.Return) { return "GPU-mock", nvml.SUCCESS },
		GpmQueryDeviceSupportFunc: func() (nvml.GpmSupport, nvml.Return) { return nvml.GpmSupport{}, nvml.SUCCESS },
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if len(migs) > 0 {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return 0, 0, nvml.ERROR_NOT_SUPPORTED
		},
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 7, nvml.SUCCESS },
		GetMigDeviceHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < len(migs) {
				return migs[i], nvml.SUCCESS
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 90}, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Used: 30 << 30}, nvml.SUCCESS
		},
		GetPowerUsageFunc:         ok32(300000),
		GetEnforcedPowerLimitFunc: ok32(700000),
		GetTemperatureFunc:        func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 60, nvml.SUCCESS },
		GetClockInfoFunc:          func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS },
		GetPcieThroughputFunc:     func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return 1, nvml.SUCCESS },
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			return 0, nvml.SUCCESS
		},
		GetComputeRunningProcessesFunc:  func() ([]nvml.ProcessInfo, nvml.Return) { return procs, nvml.SUCCESS },
		GetGraphicsRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS },
		GetProcessUtilizationFunc: func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			if refuseUtil {
				return nil, nvml.ERROR_NOT_SUPPORTED
			}
			var out []nvml.ProcessUtilizationSample
			for _, p := range procs {
				out = append(out, nvml.ProcessUtilizationSample{Pid: p.Pid, SmUtil: p.Pid % 100, MemUtil: 1, TimeStamp: 1})
			}
			return out, nvml.SUCCESS
		},
	}
}

// mockMIG is a MIG device of GPU instance gi.
func mockMIG(gi int) *mock.Device {
	ns := func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	return &mock.Device{
		GetNameFunc:              func() (string, nvml.Return) { return "NVIDIA H100 80GB HBM3 MIG 3g.40gb", nvml.SUCCESS },
		GetUUIDFunc:              func() (string, nvml.Return) { return "MIG-mock", nvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
		},
		GetMemoryInfoFunc:         func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 40 << 30}, nvml.SUCCESS },
		GetPowerUsageFunc:         ns,
		GetEnforcedPowerLimitFunc: ns,
		GetTemperatureFunc:        func(nvml.TemperatureSensors) (uint32, nvml.Return) { return ns() },
		GetClockInfoFunc:          func(nvml.ClockType) (uint32, nvml.Return) { return ns() },
		GetPcieThroughputFunc:     func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return ns() },
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		},
	}
}

// TestThroughNVMLMock runs the real GPU sampler over go-nvml's mock (8
// GPUs, GPU 3 in MIG mode, GPU 5 refusing per-process utilisation, 30
// processes) and this source over a fake /proc of three users where pid
// 1029 is gone by the time /proc is read and 1028 exits mid-read.
func TestThroughNVMLMock(t *testing.T) {
	var devs []nvml.Device
	for i := range 8 {
		var procs []nvml.ProcessInfo
		for p := i; p < 30; p += 8 {
			info := nvml.ProcessInfo{Pid: uint32(1000 + p), UsedGpuMemory: uint64(p+1) << 28, GpuInstanceId: ^uint32(0), ComputeInstanceId: ^uint32(0)}
			if i == 3 {
				info.GpuInstanceId, info.ComputeInstanceId = uint32(1+p%2), 0
			}
			procs = append(procs, info)
		}
		if i == 3 {
			devs = append(devs, mockDevice(procs, false, mockMIG(1), mockMIG(2)))
			continue
		}
		devs = append(devs, mockDevice(procs, i == 5))
	}
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) { return devs[i], nvml.SUCCESS },
	}
	g := mgpu.Open(lib, mgpu.Options{AllProcesses: true})
	defer g.Close()
	now := time.Unix(100, 0)
	if err := g.Sample(now); err != nil {
		t.Fatal(err)
	}
	src := New(g, host.NewPIDReader(procfs(t)), false)
	if err := src.Sample(now, source.Target{}); err != nil {
		t.Fatal(err)
	}
	var snap snapshot.Snapshot
	src.Fill(&snap)
	if len(snap.GPUProcesses) != 30 {
		t.Fatalf("%d GPU processes, want 30", len(snap.GPUProcesses))
	}
	users := map[string]bool{}
	for _, p := range snap.GPUProcesses {
		users[p.User] = true
		switch {
		case p.GPU == 3 && p.MIGIndex != (p.HostPID-1000)%2:
			t.Errorf("pid %d: MIG slot %d", p.HostPID, p.MIGIndex)
		case p.GPU == 5 && p.SM.State != "not supported":
			t.Errorf("pid %d on the refusing GPU: SM %+v", p.HostPID, p.SM)
		case p.GPU != 5 && (!p.SM.OK() || *p.SM.Value != float64(p.HostPID%100)):
			t.Errorf("pid %d: SM %+v", p.HostPID, p.SM)
		case !p.GPUMem.OK() || *p.GPUMem.Value != float64(uint64(p.HostPID-1000+1)<<28):
			t.Errorf("pid %d: GPU memory %+v", p.HostPID, p.GPUMem)
		}
		if p.HostPID >= 1028 && (p.Visibility == "visible" || p.RSS.OK()) {
			t.Errorf("pid %d left /proc but reads %+v", p.HostPID, p)
		}
	}
	if len(users) != 4 { // three users and "" for the two gone
		t.Errorf("users %v, want three and the unknown", users)
	}
}
