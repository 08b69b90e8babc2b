package cpu

import (
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// fromSampler converts a CPU sampler snapshot.
func fromSampler(s host.CPUSnapshot) snapshot.CPU {
	c := snapshot.CPU{Total: snapshot.Read(s.Total), Cores: make([]snapshot.Reading, len(s.Cores)),
		Load1: snapshot.Read(s.Load1), Load5: snapshot.Read(s.Load5), Load15: snapshot.Read(s.Load15),
		MemTotal: snapshot.Read(s.MemTotal), MemUsed: snapshot.Read(s.MemUsed),
		SwapTotal: snapshot.Read(s.SwapTotal), SwapUsed: snapshot.Read(s.SwapUsed)}
	for i, v := range s.Cores {
		c.Cores[i] = snapshot.Read(v)
	}
	return c
}

// FillHost implements source.HostFiller: the host's memory and swap in
// use, 0 where unread.
func (part) FillHost(s *snapshot.Snapshot, h *verdict.Host) {
	h.MemUsed, h.MemTotal, h.SwapUsed = s.CPU.MemUsed.Or(0), s.CPU.MemTotal.Or(0), s.CPU.SwapUsed.Or(0)
}
