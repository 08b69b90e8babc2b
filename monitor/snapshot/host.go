package snapshot

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
