package gpu

import (
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpumetric"
)

// Source labels of the GPU sampler's values. Each says which NVML facility
// produced the number, so a view can print "SM 63 % (GPM)" next to
// "busy 100 % (kernel-active)".
const (
	// SourceKernelActive is NVML utilization.gpu: the share of the last
	// sample period during which at least one kernel was running. One tiny
	// kernel at a time reads 100 %.
	SourceKernelActive = "NVML kernel-active"
	// SourceMemActive is NVML utilization.memory: the share of time the
	// device memory was being read or written.
	SourceMemActive = "NVML memory-active"
	// SourceGPM is NVML GPU Performance Monitoring (Hopper and later): real
	// SM activity and occupancy over the interval between two samples.
	SourceGPM = "GPM"
	// SourceNVML is a plain NVML device query (memory, power, clocks...).
	SourceNVML = "NVML"
	// SourceProcessUtil is nvmlDeviceGetProcessUtilization: per-process
	// SM and memory activity since the previous read.
	SourceProcessUtil = "NVML process utilization"
	// SourceProcessList is nvmlDeviceGetComputeRunningProcesses.
	SourceProcessList = "NVML compute processes"
)

// Snapshot is one reading of every GPU the sampler knows.
type Snapshot struct {
	// Time is the now passed to the Sample that produced this snapshot.
	Time time.Time
	// Status is empty when every reading worked; otherwise one line for a
	// status bar: "no NVIDIA driver (libnvidia-ml.so.1 not found)", "no
	// NVIDIA GPU found", "GPU 0: GPU is lost", "NVML did not answer ...".
	Status string
	// DriverVersion is the NVIDIA driver version, when known.
	DriverVersion string
	// Devices lists full GPUs in NVML index order, each followed by its MIG
	// devices.
	Devices []Device
}

// Device is one GPU or MIG device.
type Device struct {
	// Index is the NVML index of the GPU (of the parent GPU for MIG).
	Index int
	// MIG is set for a MIG device; MIGIndex is its slot on the parent and
	// GPUInstance/ComputeInstance its instance ids. All are -1 otherwise.
	MIG                                    bool
	MIGIndex, GPUInstance, ComputeInstance int
	Name, UUID                             string
	// Err is the first error this device returned in this sample, empty
	// when none.
	Err string

	// Readings are the device's readings by gpumetric.ID, in the unit of
	// their row: KernelActive and MemActive are utilization.gpu and
	// utilization.memory in % (SourceKernelActive, SourceMemActive);
	// SMActivity, SMOccupancy, TensorActive and DRAMActive GPM metrics in %
	// (SM_UTIL, SM_OCCUPANCY, ANY_TENSOR_UTIL, DRAM_BW_UTIL), NotSupported
	// where GPM is absent (before Hopper) and Missing on the first sample
	// (GPM needs two); MemUsed and MemTotal bytes of device memory; Power
	// and PowerLimit watts (draw and enforced limit); Temperature the die's
	// °C; SMClock and MemClock current clocks in MHz; PCIeRx and PCIeTx
	// PCIe throughput in bytes/s (NVML samples 20 ms windows and reports
	// KiB/s).
	Readings [gpumetric.N]metrics.Value

	// Throttle holds why clocks are held down right now.
	Throttle Throttle

	// Processes has one entry per watched pid (see Sampler.SetPIDs).
	Processes []Process
	// Running is every process NVML lists on this GPU (compute and
	// graphics, its MIG instances included) with Options.AllProcesses;
	// empty for a MIG device, whose processes are listed on its parent.
	// Without root NVML may list only the caller's own processes, or
	// report other users' memory as unknown.
	Running []RunningProcess
	// ProcList is how reading the process lists went (Missing when they
	// were not read) and ProcUtil how reading the per-process utilization
	// went (NotSupported when the driver refuses it, e.g. in MIG mode).
	ProcList, ProcUtil metrics.State
}

// RunningProcess is one process on a GPU, as NVML reports it: PID is a
// pid of the host's PID namespace (the one the driver sees).
type RunningProcess struct {
	PID int
	// MIGIndex is the MIG slot the process runs in, -1 outside MIG.
	MIGIndex int
	// Compute and Graphics say which list(s) NVML gave it in.
	Compute, Graphics bool
	// Memory is the process's device memory in bytes; NotSupported when
	// NVML hides it (another user's process, some virtualisation).
	Memory metrics.Value
	// SMUtil and MemUtil are the process's SM and memory activity in %
	// since the previous sample, where the driver gives them.
	SMUtil, MemUtil metrics.Value
}

// Process is a watched process's use of one device.
type Process struct {
	PID int
	// OnGPU is set when NVML lists the process on this device.
	OnGPU bool
	// Memory is device memory used by the process, in bytes.
	Memory metrics.Value
	// SMUtil and MemUtil are the process's SM and memory activity in %,
	// averaged over NVML's samples since the previous read.
	SMUtil, MemUtil metrics.Value
}

// Throttle is the set of current clock event (throttle) reasons.
type Throttle struct {
	Reasons Reasons
	Source  string
	State   metrics.State
}

// Reasons is NVML's clocks event reason bit mask.
type Reasons uint64

// reasonNames maps NVML clocks event reason bits to short words.
var reasonNames = []struct {
	bit  Reasons
	name string
}{
	{0x1, "idle"},
	{0x2, "app clocks"},
	{0x4, "power cap"},
	{0x8, "HW slowdown"},
	{0x10, "sync boost"},
	{0x20, "SW thermal"},
	{0x40, "HW thermal"},
	{0x80, "power brake"},
	{0x100, "display clocks"},
}

// Names lists the set reasons in words; unknown bits are ignored.
func (r Reasons) Names() []string {
	var out []string
	for _, n := range reasonNames {
		if r&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// String joins Names with ", ", or "none".
func (r Reasons) String() string {
	if n := r.Names(); len(n) > 0 {
		return strings.Join(n, ", ")
	}
	return "none"
}

// clone returns a deep copy of s.
func (s Snapshot) clone() Snapshot {
	c := s
	c.Devices = make([]Device, len(s.Devices))
	for i, d := range s.Devices {
		d.Processes = append([]Process(nil), d.Processes...)
		d.Running = append([]RunningProcess(nil), d.Running...)
		c.Devices[i] = d
	}
	return c
}
