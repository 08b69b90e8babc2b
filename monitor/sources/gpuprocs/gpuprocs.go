// Package gpuprocs is the monitor's source for every process on every GPU,
// of every user: NVML's compute and graphics process lists with per-process
// memory and, where the driver gives it, SM and memory activity
// (metrics/gpu with AllProcesses), joined with /proc for the owner,
// command line, CPU %, RSS and age (metrics/host.PIDReader).
//
// It reads the GPU sampler the gpu source samples, so NVML is initialised
// once per run; register it after the gpu source.
package gpuprocs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pipetop/pipetop/metrics"
	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// hiddenUse is the device memory in use, with no process listed, from
// which a GPU's list is said to be hidden rather than empty (drivers
// reserve a few hundred MiB per device).
const hiddenUse = 1 << 30

// GPUs is the GPU sampler's latest reading (metrics/gpu.Sampler).
type GPUs interface {
	Snapshot() mgpu.Snapshot
}

// PIDs reads processes by pid (metrics/host.PIDReader).
type PIDs interface {
	Read(now time.Time, pids []int) []host.PIDInfo
}

// Source is the GPU-process source.
type Source struct {
	part
	gpus GPUs
	pids PIDs
	root bool

	procs []snapshot.GPUProcess
	notes []string
}

// New returns the source over the GPU sampler's readings and a pid
// reader; root says whether pipetop runs as root (whom the driver shows
// every user's processes).
func New(gpus GPUs, pids PIDs, root bool) *Source {
	return &Source{gpus: gpus, pids: pids, root: root}
}

// Close implements source.Source: the GPU sampler is the gpu source's.
func (s *Source) Close() error { return nil }

// Sample implements source.Source: it joins the GPU sampler's latest
// process lists with /proc.
func (s *Source) Sample(now time.Time, _ source.Target) error {
	snap := s.gpus.Snapshot()
	s.procs, s.notes = s.procs[:0], s.notes[:0]
	var pids []int
	for _, d := range snap.Devices {
		for _, p := range d.Running {
			pids = append(pids, p.PID)
		}
	}
	infos := s.pids.Read(now, pids)
	i := 0
	for _, d := range snap.Devices {
		for _, p := range d.Running {
			s.procs = append(s.procs, join(d, p, infos[i]))
			i++
		}
	}
	slices.SortStableFunc(s.procs, func(a, b snapshot.GPUProcess) int {
		if c := cmp.Compare(b.GPUMem.Or(-1), a.GPUMem.Or(-1)); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.HostPID, b.HostPID))
	})
	s.notes = notes(snap, s.procs, s.root)
	return nil
}

// join is one NVML process with its /proc reading.
func join(d mgpu.Device, p mgpu.RunningProcess, info host.PIDInfo) snapshot.GPUProcess {
	typ := "compute"
	switch {
	case p.Compute && p.Graphics:
		typ = "compute+graphics"
	case p.Graphics:
		typ = "graphics"
	}
	return snapshot.GPUProcess{GPU: d.Index, MIGIndex: p.MIGIndex, PID: info.NSPID, HostPID: p.PID,
		User: info.User, UID: info.UID, Command: info.Cmdline, Comm: info.Comm, Type: typ,
		GPUMem: snapshot.Read(p.Memory), SM: snapshot.Read(p.SMUtil), MemUtil: snapshot.Read(p.MemUtil),
		CPU: snapshot.Read(info.CPU), RSS: snapshot.Read(info.RSS), Age: snapshot.Read(info.Age),
		Visibility: info.Vis.String()}
}

// notes says honestly what the list may lack.
func notes(snap mgpu.Snapshot, procs []snapshot.GPUProcess, root bool) []string {
	var out []string
	listed := map[int]int{}
	for _, p := range procs {
		listed[p.GPU]++
	}
	for _, d := range snap.Devices {
		switch {
		case d.MIG:
		case d.ProcList == metrics.Failed:
			out = append(out, fmt.Sprintf("GPU %d: the driver refused the process list", d.Index))
		case d.ProcList == metrics.NotSupported:
			out = append(out, fmt.Sprintf("GPU %d: no process list on this device", d.Index))
		case !root && listed[d.Index] == 0 && d.Readings[gpumetric.MemUsed].Valid() && d.Readings[gpumetric.MemUsed].V >= hiddenUse:
			out = append(out, fmt.Sprintf("GPU %d: %.1f GiB in use but no process listed: without root the driver may hide other users' processes",
				d.Index, d.Readings[gpumetric.MemUsed].V/(1<<30)))
		}
	}
	hidden, unseen := 0, 0
	for _, p := range procs {
		if !p.GPUMem.OK() && p.GPUMem.State == metrics.NotSupported.String() {
			hidden++
		}
		if p.Visibility == host.Hidden.String() {
			unseen++
		}
	}
	if hidden > 0 {
		out = append(out, fmt.Sprintf("the driver hides the GPU memory of %d process(es)", hidden))
	}
	if unseen > 0 {
		out = append(out, fmt.Sprintf("%d GPU process(es) not visible here (exited, or in another PID namespace)", unseen))
	}
	return out
}

// Fill implements source.Source; processes of the attached trainer's
// tree are marked.
func (s *Source) Fill(snap *snapshot.Snapshot) {
	tree := trainerPIDs(snap)
	snap.GPUProcesses = make([]snapshot.GPUProcess, len(s.procs))
	for i, p := range s.procs {
		p.Trainer = tree[p.HostPID]
		snap.GPUProcesses[i] = p
	}
	snap.GPUProcessNotes = append([]string(nil), s.notes...)
}

// trainerPIDs is the set of the trainer's pids: its host pid and its
// process tree as read from this /proc.
func trainerPIDs(snap *snapshot.Snapshot) map[int]bool {
	out := map[int]bool{}
	if snap.Trainer != nil && snap.Trainer.HostPID > 0 {
		out[snap.Trainer.HostPID] = true
	}
	if snap.Process != nil && snap.Process.Alive {
		out[snap.Process.Self.PID] = true
		for _, c := range snap.Process.Children {
			out[c.PID] = true
		}
	}
	return out
}

// Part is the GPU-process source's part of the snapshot: GPUProcesses and
// GPUProcessNotes.
var Part source.Part = part{}

// part saves and loads GPUProcesses and GPUProcessNotes together.
type part struct{}

// saved is the part as recorded.
type saved struct {
	Processes []snapshot.GPUProcess `json:"processes"`
	Notes     []string              `json:"notes,omitempty"`
}

// Name implements source.Part.
func (part) Name() string { return "gpu_processes" }

// Save implements source.Part.
func (part) Save(s *snapshot.Snapshot) (json.RawMessage, error) {
	return json.Marshal(saved{s.GPUProcesses, s.GPUProcessNotes})
}

// Load implements source.Part.
func (part) Load(s *snapshot.Snapshot, raw json.RawMessage) error {
	var v saved
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if v.Processes == nil {
		v.Processes = []snapshot.GPUProcess{}
	}
	s.GPUProcesses, s.GPUProcessNotes = v.Processes, v.Notes
	return nil
}
