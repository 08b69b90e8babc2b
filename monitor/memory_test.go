package monitor

import (
	"testing"
	"time"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

func reading(v float64) snapshot.Reading { return snapshot.Reading{Value: &v, State: "ok"} }

// The host readings come from the trainer's GPU (the one its processes
// hold memory on), and the RSS history grows one point per refresh and
// starts afresh for a new trainer pid.
func TestMemHistoryHost(t *testing.T) {
	var m memHistory
	t0 := time.Unix(1_700_000_000, 0)
	snap := func(i int) *snapshot.Snapshot {
		s := &snapshot.Snapshot{Time: t0.Add(time.Duration(i) * time.Second)}
		s.CPU.MemUsed, s.CPU.MemTotal, s.CPU.SwapUsed = reading(90), reading(100), reading(5)
		s.GPU.Devices = []snapshot.Device{
			{Index: 0, MemUsed: reading(1), MemTotal: reading(10), KernelActive: reading(99), TrainerMem: snapshot.Reading{State: "missing"}},
			{Index: 1, MemUsed: reading(7), MemTotal: reading(8), KernelActive: reading(30), TrainerMem: reading(6)},
		}
		s.Process = &snapshot.Process{Alive: true, Self: snapshot.Proc{RSS: reading(float64(100 + i))}}
		return s
	}
	m.host(snap(0), 42)
	h := m.host(snap(1), 42)
	if h.GPUMemUsed != 7 || h.GPUMemTotal != 8 || h.GPUActivity != 0.3 || h.GPUActivitySource != "kernel-active" {
		t.Errorf("GPU readings %+v: want the trainer's device 1", h)
	}
	if h.MemUsed != 90 || h.SwapUsed != 5 || len(h.RSS.Value) != 2 || h.RSS.Value[1] != 101 {
		t.Errorf("host readings %+v", h)
	}
	if h = m.host(snap(2), 43); len(h.RSS.Value) != 1 {
		t.Errorf("a new trainer pid kept %d RSS points", len(h.RSS.Value))
	}
}
