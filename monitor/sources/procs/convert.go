package procs

import (
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// fromSampler converts a process sampler snapshot.
func fromSampler(s host.ProcSnapshot) *snapshot.Process {
	p := &snapshot.Process{Alive: s.Alive, Self: fromProcInfo(s.Process), Truncated: s.Truncated,
		Children: make([]snapshot.Proc, len(s.Children))}
	for i, c := range s.Children {
		p.Children[i] = fromProcInfo(c)
	}
	return p
}

func fromProcInfo(p host.ProcInfo) snapshot.Proc {
	return snapshot.Proc{PID: p.PID, PPID: p.PPID, Comm: p.Comm, User: p.User, CPU: snapshot.Read(p.CPU), RSS: snapshot.Read(p.RSS),
		Threads: snapshot.Read(p.Threads), ReadRate: snapshot.Read(p.ReadRate), WriteRate: snapshot.Read(p.WriteRate)}
}

// FillHost implements source.HostFiller: the trainer's resident memory at
// s.Time, for the memory-creep rule, and the bytes it wrote a second
// since the previous reading, for the size of a checkpoint, while it is
// alive and read.
func (part) FillHost(s *snapshot.Snapshot, h *verdict.Host) {
	if s.Process == nil || !s.Process.Alive {
		return
	}
	self := &s.Process.Self
	if self.RSS.OK() {
		h.RSS.Add(s.Time.UnixNano(), self.RSS.Or(0))
	}
	if self.WriteRate.OK() {
		h.Writes.Add(s.Time.UnixNano(), self.WriteRate.Or(0))
	}
}
