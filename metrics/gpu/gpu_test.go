package gpu

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpumetric"
)

var t0 = time.Unix(1_700_000_000, 0)

// sampleN opens a sampler over lib and samples n times, one second apart.
func sampleN(t *testing.T, lib nvml.Interface, n int) (*Sampler, error) {
	t.Helper()
	s := Open(lib, Options{})
	var err error
	for i := range n {
		err = s.Sample(t0.Add(time.Duration(i) * time.Second))
	}
	return s, err
}

func want(t *testing.T, name string, got, w metrics.Value) {
	t.Helper()
	if got != w {
		t.Errorf("%s = %+v, want %+v", name, got, w)
	}
}

func TestAmpereWithoutGPM(t *testing.T) {
	s, err := sampleN(t, newFakeLib(ampere()), 2)
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	if snap.Status != "" || snap.DriverVersion != "550.54.15" || len(snap.Devices) != 1 {
		t.Fatalf("snapshot = %+v", snap)
	}
	d := snap.Devices[0]
	if d.Name != "NVIDIA RTX A4500" || d.UUID != "GPU-a4500" || d.Index != 0 || d.MIG || d.MIGIndex != -1 {
		t.Fatalf("identity = %+v", d)
	}
	want(t, "kernel-active", d.Readings[gpumetric.KernelActive], metrics.Of(100, SourceKernelActive))
	want(t, "mem-active", d.Readings[gpumetric.MemActive], metrics.Of(12, SourceMemActive))
	for name, v := range map[string]metrics.Value{"SM": d.Readings[gpumetric.SMActivity], "occupancy": d.Readings[gpumetric.SMOccupancy],
		"tensor": d.Readings[gpumetric.TensorActive], "dram": d.Readings[gpumetric.DRAMActive]} {
		want(t, name, v, metrics.Unsupported(SourceGPM))
	}
	want(t, "power", d.Readings[gpumetric.Power], metrics.Of(123.456, SourceNVML))
	want(t, "power limit", d.Readings[gpumetric.PowerLimit], metrics.Of(700, SourceNVML))
	want(t, "temperature", d.Readings[gpumetric.Temperature], metrics.Of(51, SourceNVML))
	want(t, "sm clock", d.Readings[gpumetric.SMClock], metrics.Of(1980, SourceNVML))
	want(t, "mem clock", d.Readings[gpumetric.MemClock], metrics.Of(2619, SourceNVML))
	want(t, "pcie rx", d.Readings[gpumetric.PCIeRx], metrics.Of(1000*1024, SourceNVML))
	want(t, "pcie tx", d.Readings[gpumetric.PCIeTx], metrics.Of(2000*1024, SourceNVML))
	want(t, "mem used", d.Readings[gpumetric.MemUsed], metrics.Of(10<<30, SourceNVML))
	want(t, "mem total", d.Readings[gpumetric.MemTotal], metrics.Of(80<<30, SourceNVML))
	if d.Throttle.State != metrics.OK || d.Throttle.Reasons.String() != "power cap, SW thermal" {
		t.Errorf("throttle = %+v (%s)", d.Throttle, d.Throttle.Reasons)
	}
}

func TestHopperGPMNeedsTwoSamples(t *testing.T) {
	lib := newFakeLib(hopper())
	s, err := sampleN(t, lib, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Snapshot().Devices[0]
	want(t, "first SM activity", d.Readings[gpumetric.SMActivity], metrics.Pending(SourceGPM))
	if err := s.Sample(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	d = s.Snapshot().Devices[0]
	want(t, "SM activity", d.Readings[gpumetric.SMActivity], metrics.Of(63, SourceGPM))
	want(t, "SM occupancy", d.Readings[gpumetric.SMOccupancy], metrics.Of(21, SourceGPM))
	want(t, "tensor", d.Readings[gpumetric.TensorActive], metrics.Of(7.5, SourceGPM))
	want(t, "dram", d.Readings[gpumetric.DRAMActive], metrics.Of(30, SourceGPM))
	want(t, "kernel-active beside GPM", d.Readings[gpumetric.KernelActive], metrics.Of(100, SourceKernelActive))
	// A metric the device's GPM lacks reads not supported, not zero.
	lib.gpus[0].mu.Lock()
	delete(lib.gpus[0].gpmVals, nvml.GPM_METRIC_ANY_TENSOR_UTIL)
	lib.gpus[0].mu.Unlock()
	if err := s.Sample(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	want(t, "tensor after removal", s.Snapshot().Devices[0].Readings[gpumetric.TensorActive], metrics.Unsupported(SourceGPM))
	if lib.gets != 3 || lib.metrics != 2 {
		t.Errorf("GPM sample gets %d metric gets %d, want 3 and 2", lib.gets, lib.metrics)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if lib.freed != 2 || len(lib.ShutdownCalls()) != 1 {
		t.Errorf("after Close: %d samples freed, %d shutdowns", lib.freed, len(lib.ShutdownCalls()))
	}
}

func TestMixedAndMIG(t *testing.T) {
	h := hopper()
	h.migs = []*mock.Device{migDevice("MIG-1", 3), migDevice("MIG-2", 5)}
	s, _ := sampleN(t, newFakeLib(ampere(), h), 2)
	snap := s.Snapshot()
	if snap.Status != "" {
		t.Fatalf("status %q", snap.Status)
	}
	var got []string
	for _, d := range snap.Devices {
		got = append(got, deviceLabel(d)+" "+d.UUID)
	}
	wantOrder := []string{"GPU 0 GPU-a4500", "GPU 1 GPU-h100", "GPU 1 MIG 0 MIG-1", "GPU 1 MIG 1 MIG-2"}
	if !slices.Equal(got, wantOrder) {
		t.Fatalf("devices = %q, want %q", got, wantOrder)
	}
	m := snap.Devices[3]
	if !m.MIG || m.GPUInstance != 5 || m.ComputeInstance != 0 || !strings.Contains(m.Name, "MIG 1g.10gb") {
		t.Fatalf("MIG device = %+v", m)
	}
	want(t, "MIG kernel-active", m.Readings[gpumetric.KernelActive], metrics.Unsupported(SourceKernelActive))
	want(t, "MIG power", m.Readings[gpumetric.Power], metrics.Unsupported(SourceNVML))
	want(t, "MIG memory", m.Readings[gpumetric.MemTotal], metrics.Of(10<<30, SourceNVML))
	want(t, "MIG SM activity", m.Readings[gpumetric.SMActivity], metrics.Of(63, SourceGPM))
	if m.Throttle.State != metrics.NotSupported {
		t.Errorf("MIG throttle state = %v", m.Throttle.State)
	}
}

func TestInitFailures(t *testing.T) {
	tests := []struct {
		name   string
		ret    nvml.Return
		noDevs bool
		status string
	}{
		{"no library", nvml.ERROR_LIBRARY_NOT_FOUND, false, "no NVIDIA driver (libnvidia-ml.so.1 not found)"},
		{"no kernel module", nvml.ERROR_DRIVER_NOT_LOADED, false, "no NVIDIA driver (kernel module not loaded)"},
		{"no permission", nvml.ERROR_NO_PERMISSION, false, "no permission to use the GPU (check access to /dev/nvidia*)"},
		{"version mismatch", nvml.ERROR_LIB_RM_VERSION_MISMATCH, false,
			"NVML init failed: NVML library and kernel driver versions differ (reboot or reload the driver)"},
		{"no devices", nvml.SUCCESS, true, "no NVIDIA GPU found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := newFakeLib(ampere())
			lib.initRet = tt.ret
			if tt.noDevs {
				lib.devs = nil
			}
			s, err := sampleN(t, lib, 3)
			if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), tt.status) {
				t.Fatalf("err = %v, want %q wrapping ErrUnavailable", err, tt.status)
			}
			snap := s.Snapshot()
			if snap.Status != tt.status || len(snap.Devices) != 0 {
				t.Fatalf("snapshot = %+v", snap)
			}
			if n := len(lib.InitCalls()); n != 1 {
				t.Fatalf("Init called %d times over 3 samples, want once", n)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

func TestDeviceErrorsMidRun(t *testing.T) {
	tests := []struct {
		name      string
		op        string
		ret       nvml.Return
		status    string
		power     metrics.State
		temp      metrics.State
		kernelAct metrics.State
	}{
		{"gpu lost", "power", nvml.ERROR_GPU_IS_LOST,
			"GPU 1: GPU is lost (fell off the bus or stopped responding)",
			metrics.Failed, metrics.Failed, metrics.OK},
		{"no permission for one call", "temp", nvml.ERROR_NO_PERMISSION,
			"GPU 1: nvmlDeviceGetTemperature: insufficient permissions",
			metrics.OK, metrics.Failed, metrics.OK},
		{"unknown error", "memory", nvml.ERROR_UNKNOWN,
			"GPU 1: nvmlDeviceGetMemoryInfo: unknown NVML error",
			metrics.OK, metrics.OK, metrics.OK},
		{"not supported is not an error", "temp", nvml.ERROR_NOT_SUPPORTED, "",
			metrics.OK, metrics.NotSupported, metrics.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := hopper()
			lib := newFakeLib(ampere(), bad)
			s, err := sampleN(t, lib, 1)
			if err != nil {
				t.Fatal(err)
			}
			bad.setFail(tt.op, tt.ret)
			err = s.Sample(t0.Add(time.Second))
			snap := s.Snapshot()
			if snap.Status != tt.status || (tt.status == "") != (err == nil) {
				t.Fatalf("status %q err %v, want %q", snap.Status, err, tt.status)
			}
			d := snap.Devices[1]
			if d.Readings[gpumetric.Power].State != tt.power || d.Readings[gpumetric.Temperature].State != tt.temp || d.Readings[gpumetric.KernelActive].State != tt.kernelAct {
				t.Errorf("power %v temp %v kernel-active %v", d.Readings[gpumetric.Power].State, d.Readings[gpumetric.Temperature].State, d.Readings[gpumetric.KernelActive].State)
			}
			if snap.Devices[0].Err != "" || !snap.Devices[0].Readings[gpumetric.Power].Valid() {
				t.Errorf("healthy GPU 0 affected: %+v", snap.Devices[0])
			}
			bad.setFail(tt.op, nvml.SUCCESS)
			if err := s.Sample(t0.Add(2 * time.Second)); err != nil || s.Snapshot().Status != "" {
				t.Fatalf("after recovery: err %v status %q", err, s.Snapshot().Status)
			}
		})
	}
}

func TestTwoFailingDevicesOneLine(t *testing.T) {
	a, b := ampere(), hopper()
	a.setFail("power", nvml.ERROR_GPU_IS_LOST)
	b.setFail("power", nvml.ERROR_GPU_IS_LOST)
	_, err := sampleN(t, newFakeLib(a, b), 1)
	if err == nil || err.Error() != "GPU 0: GPU is lost (fell off the bus or stopped responding) (and 1 more)" {
		t.Fatalf("err = %v", err)
	}
}

func TestHungCallTimesOut(t *testing.T) {
	g := ampere()
	lib := newFakeLib(g)
	s := Open(lib, Options{Timeout: 50 * time.Millisecond})
	if err := s.Sample(t0); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	g.mu.Lock()
	g.block = release
	g.mu.Unlock()
	const status = "NVML did not answer within 50ms (nvmlDeviceGetPowerUsage on GPU 0); GPU readings paused"
	for i := 1; i <= 3; i++ {
		err := s.Sample(t0.Add(time.Duration(i) * time.Second))
		if !errors.Is(err, ErrTimeout) || s.Snapshot().Status != status {
			t.Fatalf("sample %d: err %v status %q", i, err, s.Snapshot().Status)
		}
	}
	if n := len(lib.devs[0].GetPowerUsageCalls()); n != 2 {
		t.Fatalf("GetPowerUsage called %d times, want 2 (no new calls while one hangs)", n)
	}
	if err := s.Close(); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Close while stuck = %v, want ErrTimeout", err)
	}
	g.mu.Lock()
	g.block = nil
	g.mu.Unlock()
	close(release)
	<-s.inflight
	if err := s.Sample(t0.Add(5 * time.Second)); err != nil || s.Snapshot().Status != "" {
		t.Fatalf("after the call returned: err %v status %q", err, s.Snapshot().Status)
	}
}

func TestHungInitTimesOut(t *testing.T) {
	lib := newFakeLib(ampere())
	lib.initWait = make(chan struct{})
	s := Open(lib, Options{Timeout: 30 * time.Millisecond})
	if got := s.Snapshot().Status; got != "NVML did not answer within 30ms (nvmlInit); GPU readings paused" {
		t.Fatalf("status = %q", got)
	}
	close(lib.initWait)
	<-s.inflight
	if err := s.Sample(t0); err != nil || len(s.Snapshot().Devices) != 1 {
		t.Fatalf("after init returned: err %v, %d devices", err, len(s.Snapshot().Devices))
	}
}

func TestWatchedProcesses(t *testing.T) {
	g := hopper()
	g.procs = []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 3 << 30}, {Pid: 7, UsedGpuMemory: 1 << 20}}
	lib := newFakeLib(g)
	s := Open(lib, Options{})
	s.SetPIDs(4242, 99)
	// First read: no utilisation samples yet (NVML says NOT_FOUND): 0 %.
	if err := s.Sample(t0); err != nil {
		t.Fatal(err)
	}
	p := s.Snapshot().Devices[0].Processes
	if len(p) != 2 || !p[0].OnGPU || p[1].OnGPU {
		t.Fatalf("processes = %+v", p)
	}
	want(t, "4242 memory", p[0].Memory, metrics.Of(3<<30, SourceProcessList))
	want(t, "4242 SM, no samples", p[0].SMUtil, metrics.Of(0, SourceProcessUtil))
	want(t, "99 memory", p[1].Memory, metrics.Of(0, SourceProcessList))
	ts := uint64(t0.UnixMicro())
	g.mu.Lock()
	g.pUtil = []nvml.ProcessUtilizationSample{
		{Pid: 4242, TimeStamp: ts + 10, SmUtil: 50, MemUtil: 20},
		{Pid: 7, TimeStamp: ts + 30, SmUtil: 99},
		{Pid: 4242, TimeStamp: ts + 20, SmUtil: 70, MemUtil: 40},
	}
	g.mu.Unlock()
	if err := s.Sample(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	p = s.Snapshot().Devices[0].Processes
	want(t, "4242 SM", p[0].SMUtil, metrics.Of(60, SourceProcessUtil))
	want(t, "4242 mem", p[0].MemUtil, metrics.Of(30, SourceProcessUtil))
	want(t, "99 SM", p[1].SMUtil, metrics.Of(0, SourceProcessUtil))
	if err := s.Sample(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	calls := lib.devs[0].GetProcessUtilizationCalls()
	if got := []uint64{calls[0].V, calls[1].V, calls[2].V}; !slices.Equal(got, []uint64{ts - 1e6, ts - 1e6, ts + 30}) {
		t.Fatalf("last-seen timestamps passed = %v", got)
	}
	g.setFail("procs", nvml.ERROR_NO_PERMISSION)
	err := s.Sample(t0.Add(3 * time.Second))
	if err == nil || !strings.Contains(err.Error(), "nvmlDeviceGetComputeRunningProcesses: insufficient permissions") {
		t.Fatalf("err = %v", err)
	}
	want(t, "memory without permission", s.Snapshot().Devices[0].Processes[0].Memory, metrics.Failure(SourceProcessList))
}

// TestRealLibrary goes through nvml.New(), i.e. dlopen of libnvidia-ml.
// Without a driver (this project's CI) it must report one clear line; with
// one it must list devices.
func TestRealLibrary(t *testing.T) {
	s := Open(nvml.New(), Options{})
	defer s.Close()
	err := s.Sample(time.Now())
	snap := s.Snapshot()
	switch {
	case errors.Is(err, ErrUnavailable):
		if snap.Status != "no NVIDIA driver (libnvidia-ml.so.1 not found)" && snap.Status != "no NVIDIA GPU found" &&
			!strings.HasPrefix(snap.Status, "no NVIDIA driver") {
			t.Fatalf("status = %q", snap.Status)
		}
		t.Logf("no GPU here: %s", snap.Status)
	case err != nil:
		t.Fatalf("sample with a driver: %v", err)
	default:
		if len(snap.Devices) == 0 || snap.Devices[0].Name == "" || !snap.Devices[0].Readings[gpumetric.MemTotal].Valid() {
			t.Fatalf("driver present but snapshot = %+v", snap)
		}
	}
}

func TestReasons(t *testing.T) {
	if got := Reasons(0).String(); got != "none" {
		t.Errorf("0 = %q", got)
	}
	if got := Reasons(0x1 | 0x40 | 0x10000).String(); got != "idle, HW thermal" {
		t.Errorf("got %q", got)
	}
}
