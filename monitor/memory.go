package monitor

import (
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// memHistory remembers the trainer's resident and GPU memory over the last
// HistoryLen refreshes, for the memory-creep rule.
type memHistory struct {
	pid         int
	rss, gpuMem verdict.Series
}

// host gathers the verdict's host readings from s and records this
// refresh's memory; a new trainer pid starts the history afresh.
func (m *memHistory) host(s *snapshot.Snapshot, pid int) *verdict.Host {
	if pid != m.pid {
		*m = memHistory{pid: pid}
	}
	h := &verdict.Host{MemUsed: s.CPU.MemUsed.Or(0), MemTotal: s.CPU.MemTotal.Or(0), SwapUsed: s.CPU.SwapUsed.Or(0)}
	now := s.Time.UnixNano()
	if d := trainerDevice(s); d != nil {
		h.GPUMemUsed, h.GPUMemTotal = d.MemUsed.Or(0), d.MemTotal.Or(0)
		switch {
		case d.SMActivity.OK():
			h.GPUActivity, h.GPUActivitySource = d.SMActivity.Or(0)/100, "GPM"
		case d.KernelActive.OK():
			h.GPUActivity, h.GPUActivitySource = d.KernelActive.Or(0)/100, "kernel-active"
		}
		if d.MemUsed.OK() {
			addCapped(&m.gpuMem, now, d.MemUsed.Or(0))
		}
	}
	if s.Process != nil && s.Process.Alive && s.Process.Self.RSS.OK() {
		addCapped(&m.rss, now, s.Process.Self.RSS.Or(0))
	}
	h.RSS, h.GPUMem = m.rss, m.gpuMem
	h.CPU = hostCPU(s.Threads, &s.CPU)
	return h
}

// trainerDevice is the GPU the trainer's processes hold memory on (the
// one holding most), or nil.
func trainerDevice(s *snapshot.Snapshot) *snapshot.Device {
	var best *snapshot.Device
	for i := range s.GPU.Devices {
		d := &s.GPU.Devices[i]
		if d.TrainerMem.OK() && (best == nil || d.TrainerMem.Or(0) > best.TrainerMem.Or(0)) {
			best = d
		}
	}
	return best
}

// addCapped appends a sample, dropping the oldest beyond HistoryLen.
func addCapped(s *verdict.Series, t int64, v float64) {
	if len(s.TimeNs) >= HistoryLen {
		s.TimeNs = append(s.TimeNs[:0], s.TimeNs[1:]...)
		s.Value = append(s.Value[:0], s.Value[1:]...)
	}
	s.Add(t, v)
}
