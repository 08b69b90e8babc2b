package verdict

import (
	"fmt"
	"math"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Host is what a viewer measured around the trainer, for the memory rules
// and for runs that publish no GPU stage times. Zero values mean unknown.
type Host struct {
	// GPUMemUsed and GPUMemTotal are the trainer's GPU's memory in bytes.
	GPUMemUsed, GPUMemTotal float64
	// GPUActivity is the trainer's GPU's activity (0..1) measured by NVML;
	// GPUActivitySource says which counter ("GPM" SM activity, which is
	// trustworthy, or "kernel-active", which one tiny kernel fills).
	GPUActivity       float64
	GPUActivitySource string
	// MemUsed, MemTotal, SwapUsed are the host's memory in bytes.
	MemUsed, MemTotal, SwapUsed float64
	// RSS and GPUMem are the trainer's resident memory and its GPU's used
	// memory over the recent past, oldest first.
	RSS, GPUMem Series
	// CPU is the run's threads and the CPU it may use; nil when unread.
	CPU *HostCPU
	// Writes is the bytes a second the trainer process wrote through
	// write calls (its /proc/PID/io wchar), sampled over the recent past,
	// oldest first.
	Writes Series
}

// WriteRate is the mean of the Writes samples (bytes a second), 0 when
// there are none.
func (h *Host) WriteRate() float64 {
	if h == nil || len(h.Writes.Value) == 0 {
		return 0
	}
	var sum float64
	for _, v := range h.Writes.Value {
		sum += v
	}
	return sum / float64(len(h.Writes.Value))
}

// Series is a number sampled over time.
type Series struct {
	TimeNs []int64   // Unix nanoseconds
	Value  []float64 // the value at each time
}

// Add appends one sample.
func (s *Series) Add(t int64, v float64) {
	s.TimeNs = append(s.TimeNs, t)
	s.Value = append(s.Value, v)
}

// Thresholds of the memory rules.
const (
	GPUMemFull     = 0.95 // GPU memory used at or above this share: near capacity
	HostMemFull    = 0.90 // host memory used at or above this share ...
	SwapInUse      = 64e6 // ... with this much swap in use: swapping
	CreepMinNs     = 10e9 // a creep is judged over at least this span ...
	CreepMinPoints = 5    // ... and this many samples
	CreepMinBytes  = 64e6 // it must have grown by at least this ...
	CreepMinGrowth = 0.10 // ... and this share of where it started
	CreepFit       = 0.80 // and grown steadily: R² of a straight line at least this
)

// memoryRule: memory near capacity or swapping (a live window's readings
// of now), or memory creeping upward over the readings it is given (a
// live window's history, or the end of a whole run that pipetop run kept).
func memoryRule(in *Inputs) (Verdict, bool) {
	h := in.Host
	if h == nil {
		return Verdict{}, false
	}
	if in.Live && h.GPUMemTotal > 0 && h.GPUMemUsed >= GPUMemFull*h.GPUMemTotal {
		return Verdict{Kind: MemoryFull,
			Headline: fmt.Sprintf("GPU memory near capacity: %s of %s used (%s); the allocator has little headroom",
				units.Bytes(h.GPUMemUsed), units.Bytes(h.GPUMemTotal), units.Pct(h.GPUMemUsed/h.GPUMemTotal)),
			Next: "expect out-of-memory errors or allocator retries: lower the batch, checkpoint activations, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"}, true
	}
	if in.Live && h.MemTotal > 0 && h.MemUsed >= HostMemFull*h.MemTotal && h.SwapUsed >= SwapInUse {
		return Verdict{Kind: Swapping,
			Headline: fmt.Sprintf("swapping: host memory %s full and %s in swap", units.Pct(h.MemUsed/h.MemTotal), units.Bytes(h.SwapUsed)),
			Next:     "pages of the trainer or its loader go to disk: lower the decoded-chunk cache (--cache-mb), the loader workers or the prefetch depth"}, true
	}
	for _, c := range []struct {
		what string
		s    Series
		next string
	}{
		{"the trainer's resident memory", h.RSS, "a host-side leak: tensors or batches kept across steps (a list of losses without .item(), a growing cache); at this rate it runs out"},
		{"GPU memory", h.GPUMem, "a device-side leak: tensors kept alive across steps (losses accumulated with their graph, a growing cache)"},
	} {
		if grew, span, ok := creep(c.s); ok {
			return Verdict{Kind: MemoryCreep,
				Headline: fmt.Sprintf("memory creep: %s grew %s in %s (%s/s), steadily", c.what, units.Bytes(grew), secs(span), units.Bytes(grew/(span/1e9))),
				Next:     c.next}, true
		}
	}
	return Verdict{}, false
}

// creep reports whether s grows steadily: span and growth over thresholds
// and a straight line fits it well.
func creep(s Series) (grew, span float64, ok bool) {
	n := len(s.Value)
	if n < CreepMinPoints || len(s.TimeNs) != n {
		return 0, 0, false
	}
	span = float64(s.TimeNs[n-1] - s.TimeNs[0])
	if span < CreepMinNs {
		return 0, 0, false
	}
	slope, r2 := fit(s)
	grew = slope * span
	if slope <= 0 || r2 < CreepFit || grew < CreepMinBytes || grew < CreepMinGrowth*s.Value[0] {
		return 0, 0, false
	}
	return grew, span, true
}

// fit is the least-squares slope (per ns) of s and its R².
func fit(s Series) (slope, r2 float64) {
	n := float64(len(s.Value))
	var mt, mv float64
	for i := range s.Value {
		mt += float64(s.TimeNs[i]-s.TimeNs[0]) / n
		mv += s.Value[i] / n
	}
	var stt, stv, svv float64
	for i := range s.Value {
		dt, dv := float64(s.TimeNs[i]-s.TimeNs[0])-mt, s.Value[i]-mv
		stt += dt * dt
		stv += dt * dv
		svv += dv * dv
	}
	if stt == 0 || svv == 0 {
		return 0, 0
	}
	return stv / stt, stv * stv / (stt * svv)
}

// gpuView is the GPU's busy share from the trainer's own CUDA-event times
// when it publishes them, else from NVML.
type gpuView struct {
	known   bool
	busy    float64
	source  string // "" for the trainer's own timings
	trusted bool   // busy really means the GPU was busy (not kernel-active)
}

func gpuOf(s stage.Summary, h *Host) gpuView {
	if s.HasGPU {
		return gpuView{known: true, busy: s.GPUBusy, trusted: true}
	}
	if h == nil || h.GPUActivitySource == "" || math.IsNaN(h.GPUActivity) {
		return gpuView{}
	}
	return gpuView{known: true, busy: h.GPUActivity, source: h.GPUActivitySource, trusted: h.GPUActivitySource == "GPM"}
}

// label names where a busy share from NVML came from.
func (g gpuView) label() string {
	switch g.source {
	case "":
		return ""
	case "GPM":
		return " (NVML GPM SM activity; the run publishes no GPU stage times)"
	}
	return fmt.Sprintf(" (NVML %s; the run publishes no GPU stage times)", g.source)
}
