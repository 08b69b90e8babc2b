package gpu

import (
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeGPU describes one mocked device; the mock methods read its fields
// under mu, so tests can change readings (or inject errors) between samples.
type fakeGPU struct {
	mu      sync.Mutex
	name    string
	uuid    string
	gpm     bool
	util    nvml.Utilization
	power   uint32 // mW
	fail    map[string]nvml.Return
	block   chan struct{} // when set, GetPowerUsage waits on it
	procs   []nvml.ProcessInfo
	gprocs  []nvml.ProcessInfo // graphics processes
	pUtil   []nvml.ProcessUtilizationSample
	gpmVals map[nvml.GpmMetricId]float64
	migs    []*mock.Device
}

// ret returns the injected error of op, or SUCCESS.
func (f *fakeGPU) ret(op string) nvml.Return {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.fail[op]; ok {
		return r
	}
	return nvml.SUCCESS
}

func (f *fakeGPU) setFail(op string, r nvml.Return) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = map[string]nvml.Return{}
	}
	f.fail[op] = r
}

// device builds the mock.Device for f.
func (f *fakeGPU) device() *mock.Device {
	return &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return f.name, f.ret("name") },
		GetUUIDFunc: func() (string, nvml.Return) { return f.uuid, f.ret("uuid") },
		GpmQueryDeviceSupportFunc: func() (nvml.GpmSupport, nvml.Return) {
			s := nvml.GpmSupport{}
			if f.gpm {
				s.IsSupportedDevice = 1
			}
			return s, f.ret("gpmsupport")
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if len(f.migs) > 0 {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return 0, 0, nvml.ERROR_NOT_SUPPORTED
		},
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 7, nvml.SUCCESS },
		GetMigDeviceHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < len(f.migs) {
				return f.migs[i], nvml.SUCCESS
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.util, nvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Used: 10 << 30, Free: 70 << 30}, f.ret("memory")
		},
		GetPowerUsageFunc: func() (uint32, nvml.Return) {
			f.mu.Lock()
			block := f.block
			f.mu.Unlock()
			if block != nil {
				<-block
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.power, f.fail["power"]
		},
		GetEnforcedPowerLimitFunc: func() (uint32, nvml.Return) { return 700000, f.ret("powerlimit") },
		GetTemperatureFunc: func(nvml.TemperatureSensors) (uint32, nvml.Return) {
			return 51, f.ret("temp")
		},
		GetClockInfoFunc: func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_SM {
				return 1980, f.ret("clock")
			}
			return 2619, f.ret("clock")
		},
		GetPcieThroughputFunc: func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
			if c == nvml.PCIE_UTIL_RX_BYTES {
				return 1000, f.ret("pcie")
			}
			return 2000, f.ret("pcie")
		},
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			return 0x4 | 0x20, f.ret("reasons")
		},
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.procs, f.fail["procs"]
		},
		GetGraphicsRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.gprocs, f.fail["gprocs"]
		},
		GetProcessUtilizationFunc: func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.pUtil) == 0 {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return f.pUtil, f.fail["putil"]
		},
	}
}

// migDevice is a MIG device: most device-wide queries are not supported.
func migDevice(uuid string, gi int) *mock.Device {
	ns := func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	return &mock.Device{
		GetNameFunc:              func() (string, nvml.Return) { return "NVIDIA H100 80GB HBM3 MIG 1g.10gb", nvml.SUCCESS },
		GetUUIDFunc:              func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 10 << 30, Used: 1 << 30}, nvml.SUCCESS
		},
		GetPowerUsageFunc:         ns,
		GetEnforcedPowerLimitFunc: ns,
		GetTemperatureFunc:        func(nvml.TemperatureSensors) (uint32, nvml.Return) { return ns() },
		GetClockInfoFunc:          func(nvml.ClockType) (uint32, nvml.Return) { return ns() },
		GetPcieThroughputFunc:     func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return ns() },
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		},
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS },
		GetProcessUtilizationFunc: func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			return nil, nvml.ERROR_NOT_SUPPORTED
		},
	}
}

// fakeLib is a mocked NVML with the given devices. GPM samples are mock
// samples; GpmMetricsGet answers from the device that filled Sample2.
type fakeLib struct {
	*mock.Interface
	initRet  nvml.Return
	initWait chan struct{}
	gpus     []*fakeGPU
	devs     []*mock.Device

	mu      sync.Mutex
	owner   map[nvml.GpmSample]*fakeGPU // which device filled a sample
	freed   int
	gets    int
	metrics int
}

func newFakeLib(gpus ...*fakeGPU) *fakeLib {
	l := &fakeLib{gpus: gpus, owner: map[nvml.GpmSample]*fakeGPU{}}
	for _, g := range gpus {
		l.devs = append(l.devs, g.device())
	}
	l.Interface = &mock.Interface{
		InitFunc: func() nvml.Return {
			if l.initWait != nil {
				<-l.initWait
			}
			return l.initRet
		},
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(l.devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i >= len(l.devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return l.devs[i], nvml.SUCCESS
		},
		GpmSampleAllocFunc: func() (nvml.GpmSample, nvml.Return) { return l.newSample(), nvml.SUCCESS },
		GpmMetricsGetFunc:  l.metricsGet,
	}
	return l
}

// newSample returns a mock GPM sample recording which device filled it.
func (l *fakeLib) newSample() *mock.GpmSample {
	s := &mock.GpmSample{}
	record := func(g *fakeGPU) nvml.Return {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.owner[s] = g
		l.gets++
		return nvml.SUCCESS
	}
	s.GetFunc = func(d nvml.Device) nvml.Return { return record(l.gpuOf(d)) }
	s.MigGetFunc = func(d nvml.Device, gi int) nvml.Return { return record(l.gpuOf(d)) }
	s.FreeFunc = func() nvml.Return {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.freed++
		return nvml.SUCCESS
	}
	return s
}

func (l *fakeLib) gpuOf(d nvml.Device) *fakeGPU {
	for i, x := range l.devs {
		if x == d {
			return l.gpus[i]
		}
	}
	return nil
}

func (l *fakeLib) metricsGet(m *nvml.GpmMetricsGetType) nvml.Return {
	l.mu.Lock()
	g := l.owner[m.Sample2]
	first := l.owner[m.Sample1]
	l.metrics++
	l.mu.Unlock()
	if g == nil || first != g {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range m.NumMetrics {
		v, ok := g.gpmVals[nvml.GpmMetricId(m.Metrics[i].MetricId)]
		if !ok {
			m.Metrics[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			continue
		}
		m.Metrics[i].Value = v
		m.Metrics[i].NvmlReturn = uint32(nvml.SUCCESS)
	}
	return nvml.SUCCESS
}

// ampere is an A4500-like device: no GPM.
func ampere() *fakeGPU {
	return &fakeGPU{name: "NVIDIA RTX A4500", uuid: "GPU-a4500", util: nvml.Utilization{Gpu: 100, Memory: 12}, power: 123456}
}

// hopper is an H100-like device with GPM.
func hopper() *fakeGPU {
	return &fakeGPU{name: "NVIDIA H100 80GB HBM3", uuid: "GPU-h100", gpm: true,
		util: nvml.Utilization{Gpu: 100, Memory: 40}, power: 350000,
		gpmVals: map[nvml.GpmMetricId]float64{
			nvml.GPM_METRIC_SM_UTIL: 63, nvml.GPM_METRIC_SM_OCCUPANCY: 21,
			nvml.GPM_METRIC_ANY_TENSOR_UTIL: 7.5, nvml.GPM_METRIC_DRAM_BW_UTIL: 30,
		}}
}
