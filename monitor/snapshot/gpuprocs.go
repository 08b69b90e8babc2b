package snapshot

// GPUProcess is one process on a GPU (compute, graphics or both), joined
// with what /proc says about it. Memory in bytes, percentages 0..100, age
// in seconds.
type GPUProcess struct {
	// GPU is the NVML index of the GPU; MIGIndex the MIG slot, -1 outside
	// MIG.
	GPU      int `json:"gpu"`
	MIGIndex int `json:"mig_index"`
	// PID is the process's pid in its own PID namespace (the pid a
	// container's tools show); HostPID is the pid the driver reports, in
	// the namespace pipetop reads /proc from. They differ only for a
	// process in a container seen from the host.
	PID     int `json:"pid"`
	HostPID int `json:"host_pid"`
	// User is the owner's name (or uid); empty when not visible.
	User string `json:"user"`
	UID  int    `json:"uid"`
	// Command is the full command line, Comm the kernel's short name.
	Command string `json:"command"`
	Comm    string `json:"comm"`
	// Type is "compute", "graphics" or "compute+graphics".
	Type    string  `json:"type"`
	GPUMem  Reading `json:"gpu_mem"`
	SM      Reading `json:"sm"`
	MemUtil Reading `json:"mem_util"`
	CPU     Reading `json:"cpu"`
	RSS     Reading `json:"rss"`
	Age     Reading `json:"age"`
	// Visibility is "visible", "not visible" (exited, or in a PID
	// namespace this /proc does not show) or "exited" (went away while
	// being read).
	Visibility string `json:"visibility"`
	// Trainer is set for a process of the attached trainer's tree.
	Trainer bool `json:"trainer,omitempty"`
}
