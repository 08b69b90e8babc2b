package snapshot

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/pipetop/pipetop/metrics/gpumetric"
)

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
	Index    int    `json:"index"`
	MIG      bool   `json:"mig"`
	MIGIndex int    `json:"mig_index"`
	Name     string `json:"name"`
	UUID     string `json:"uuid"`
	Err      string `json:"error,omitempty"`
	// Readings are the device's readings by gpumetric.ID, each under its
	// row's Key in JSON (kernel_active, sm_activity, mem_used, ...).
	Readings [gpumetric.N]Reading `json:"-"`
	Throttle []string             `json:"throttle"`
	// TrainerMem is the trainer's own device memory (bytes), summed over
	// its process tree; missing when it does not use this device.
	TrainerMem Reading `json:"trainer_mem"`
}

// deviceHead is a Device's fields before its readings, in JSON.
type deviceHead struct {
	Index    int    `json:"index"`
	MIG      bool   `json:"mig"`
	MIGIndex int    `json:"mig_index"`
	Name     string `json:"name"`
	UUID     string `json:"uuid"`
	Err      string `json:"error,omitempty"`
}

// deviceTail is a Device's fields after its readings, in JSON.
type deviceTail struct {
	Throttle   []string `json:"throttle"`
	TrainerMem Reading  `json:"trainer_mem"`
}

// MarshalJSON writes d as one object: its head, each reading under its
// key (gpumetric.Table), then its throttle reasons and trainer memory.
func (d Device) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(deviceHead{d.Index, d.MIG, d.MIGIndex, d.Name, d.UUID, d.Err})
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(deviceTail{d.Throttle, d.TrainerMem})
	if err != nil {
		return nil, err
	}
	b := append(head[:len(head)-1:len(head)-1], ',')
	for id, m := range gpumetric.Table {
		r, err := json.Marshal(d.Readings[id])
		if err != nil {
			return nil, err
		}
		b = append(strconv.AppendQuote(b, m.Key), ':')
		b = append(append(b, r...), ',')
	}
	return append(b, tail[1:]...), nil
}

// UnmarshalJSON reads what MarshalJSON writes; a reading the object lacks
// stays the zero Reading.
func (d *Device) UnmarshalJSON(b []byte) error {
	var head deviceHead
	var tail deviceTail
	var fields map[string]json.RawMessage
	for _, v := range []any{&head, &tail, &fields} {
		if err := json.Unmarshal(b, v); err != nil {
			return err
		}
	}
	*d = Device{Index: head.Index, MIG: head.MIG, MIGIndex: head.MIGIndex, Name: head.Name, UUID: head.UUID, Err: head.Err,
		Throttle: tail.Throttle, TrainerMem: tail.TrainerMem}
	for id, m := range gpumetric.Table {
		if raw, ok := fields[m.Key]; ok {
			if err := json.Unmarshal(raw, &d.Readings[id]); err != nil {
				return fmt.Errorf("gpu device %s: %w", m.Key, err)
			}
		}
	}
	return nil
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
