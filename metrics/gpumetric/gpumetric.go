// Package gpumetric is the one table of a GPU device's readings: the GPU
// sampler (metrics/gpu) reads each into its index of Device.Readings, the
// snapshot shows it under its Key (pipetop --json), the exporter serves
// it as its Prom series in base units, and a remote view (monitor/remote)
// reads that series back. Adding a GPU metric is a row here, its reading
// in metrics/gpu, and its line in the GPU pane when it is shown
// (docs/architecture.md, "Add a GPU metric").
package gpumetric

// ID is a reading's index in the table.
type ID int

// The readings, in the order of the snapshot's JSON.
const (
	KernelActive ID = iota
	MemActive
	SMActivity
	SMOccupancy
	TensorActive
	DRAMActive
	MemUsed
	MemTotal
	Power
	PowerLimit
	Temperature
	SMClock
	MemClock
	PCIeRx
	PCIeTx
	// N is the number of readings.
	N
)

// Unit is the unit a reading is taken and shown in, and how the exporter
// turns it into a Prometheus base unit.
type Unit int

// The units of the readings.
const (
	Plain   Unit = iota // bytes, watts, °C, bytes/s: exported as they are
	Percent             // exported as a 0..1 ratio
	MHz                 // exported in Hz
)

// Export converts a reading in u to its exported base unit.
func (u Unit) Export(v float64) float64 {
	switch u {
	case Percent:
		return v / 100
	case MHz:
		return v * 1e6
	}
	return v
}

// Import converts an exported value back to u (a remote view's readings).
func (u Unit) Import(v float64) float64 {
	switch u {
	case Percent:
		return v * 100
	case MHz:
		return v * 1e-6
	}
	return v
}

// Metric is one row of the table.
type Metric struct {
	// Key names the reading in the snapshot's JSON.
	Key  string
	Unit Unit
	// Prom is the exporter's series (labelled by device); "" for a
	// reading the exporter does not serve. Help is its HELP text.
	Prom, Help string
}

// Table is every reading of a device, by ID.
var Table = [N]Metric{
	KernelActive: {"kernel_active", Percent, "pipetop_gpu_kernel_active_ratio", "Share of time at least one kernel was running (NVML utilization.gpu): not how hard the GPU worked."},
	MemActive:    {"mem_active", Percent, "pipetop_gpu_memory_active_ratio", "Share of time device memory was read or written (NVML utilization.memory)."},
	SMActivity:   {"sm_activity", Percent, "pipetop_gpu_sm_activity_ratio", "Share of SMs busy between two samples (GPM SM_UTIL, Hopper and later)."},
	SMOccupancy:  {"sm_occupancy", Percent, "pipetop_gpu_sm_occupancy_ratio", "Resident warps relative to the SMs' maximum (GPM SM_OCCUPANCY)."},
	TensorActive: {"tensor_active", Percent, "pipetop_gpu_tensor_activity_ratio", "Share of time any tensor core was active (GPM ANY_TENSOR_UTIL)."},
	DRAMActive:   {"dram_active", Percent, "pipetop_gpu_dram_activity_ratio", "DRAM bandwidth used as a share of the peak (GPM DRAM_BW_UTIL)."},
	MemUsed:      {"mem_used", Plain, "pipetop_gpu_memory_used_bytes", "Device memory in use."},
	MemTotal:     {"mem_total", Plain, "pipetop_gpu_memory_total_bytes", "Device memory in all."},
	Power:        {"power", Plain, "pipetop_gpu_power_watts", "Power draw."},
	PowerLimit:   {"power_limit", Plain, "pipetop_gpu_power_limit_watts", "Enforced power limit."},
	Temperature:  {"temperature", Plain, "pipetop_gpu_temperature_celsius", "GPU die temperature."},
	SMClock:      {"sm_clock", MHz, "pipetop_gpu_sm_clock_hertz", "Current SM clock."},
	MemClock:     {"mem_clock", MHz, "pipetop_gpu_memory_clock_hertz", "Current memory clock."},
	PCIeRx:       {"pcie_rx", Plain, "", ""},
	PCIeTx:       {"pcie_tx", Plain, "", ""},
}

// ByProm is the reading the exporter serves as series name.
func ByProm(name string) (ID, bool) {
	for id, m := range Table {
		if m.Prom != "" && m.Prom == name {
			return ID(id), true
		}
	}
	return 0, false
}
