package monitor

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/cpu"
	"github.com/pipetop/pipetop/monitor/sources/gpu"
	"github.com/pipetop/pipetop/monitor/sources/procs"
	"github.com/pipetop/pipetop/monitor/sources/threads"
)

// fakeSource is a FAKE source that records what the snapshotter asked of it.
type fakeSource struct {
	name    string
	err     error
	targets []source.Target
	filled  int
}

func (f *fakeSource) Name() string { return f.name }
func (f *fakeSource) Sample(_ time.Time, t source.Target) error {
	f.targets = append(f.targets, t)
	return f.err
}
func (f *fakeSource) Fill(s *snapshot.Snapshot) {
	f.filled++
	s.CPU.Load1 = snapshot.Reading{State: "failed", Source: f.name}
}
func (f *fakeSource) Save(*snapshot.Snapshot) (json.RawMessage, error) { return nil, nil }
func (f *fakeSource) Load(*snapshot.Snapshot, json.RawMessage) error   { return nil }
func (f *fakeSource) Close() error                                     { return nil }

func TestSnapshotterRunsEverySource(t *testing.T) {
	a, b := &fakeSource{name: "a"}, &fakeSource{name: "b", err: errors.New("broken")}
	f := feed.New(0)
	defer f.Close()
	c := NewSnapshotter(f, a, b)
	s := c.Snapshot(time.Unix(100, 0), Windows[0])
	if a.filled != 1 || b.filled != 1 {
		t.Fatalf("filled a=%d b=%d, want 1 each", a.filled, b.filled)
	}
	if len(s.Samplers) != 2 || s.Samplers[0].Name != "a" || !s.Samplers[0].OK || s.Samplers[1].Name != "b" || s.Samplers[1].OK {
		t.Errorf("samplers = %+v, want a ok, b failed", s.Samplers)
	}
	if a.targets[0].PID != 0 {
		t.Errorf("target pid = %d without a trainer, want 0", a.targets[0].PID)
	}
	if s.CPU.Load1.Source != "b" {
		t.Errorf("the later source should fill last, got %q", s.CPU.Load1.Source)
	}
	if s.GPU.Status != "GPU monitoring off" {
		t.Errorf("GPU status without a GPU source = %q", s.GPU.Status)
	}
}

func reading(v float64) snapshot.Reading { return snapshot.Reading{Value: &v, State: "ok"} }

// The host readings come from the trainer's GPU (the one its processes
// hold memory on), and the RSS history grows one point per refresh and
// starts afresh for a new trainer pid.
func TestMemHistoryHost(t *testing.T) {
	var hist memHistory
	m := hostOf{&hist}
	t0 := time.Unix(1_700_000_000, 0)
	snap := func(i int) *snapshot.Snapshot {
		s := &snapshot.Snapshot{Time: t0.Add(time.Duration(i) * time.Second)}
		s.CPU.MemUsed, s.CPU.MemTotal, s.CPU.SwapUsed = reading(90), reading(100), reading(5)
		s.GPU.Devices = []snapshot.Device{
			{Index: 0, Readings: [gpumetric.N]snapshot.Reading{gpumetric.MemUsed: reading(1), gpumetric.MemTotal: reading(10), gpumetric.KernelActive: reading(99)},
				TrainerMem: snapshot.Reading{State: "missing"}},
			{Index: 1, Readings: [gpumetric.N]snapshot.Reading{gpumetric.MemUsed: reading(7), gpumetric.MemTotal: reading(8), gpumetric.KernelActive: reading(30)},
				TrainerMem: reading(6)},
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

// hostOf gathers the host readings as the snapshotter does: from the
// parts of the sources that have some, with the memory history.
type hostOf struct{ m *memHistory }

func (o hostOf) host(s *snapshot.Snapshot, pid int) *verdict.Host {
	h := &verdict.Host{}
	for _, p := range []source.HostFiller{cpu.Part, gpu.Part, procs.Part, threads.Part} {
		p.FillHost(s, h)
	}
	o.m.add(pid, h)
	return h
}

// countJudge makes c count its Judge calls into calls and the verdicts
// they judge into judged.
func countJudge(c *Snapshotter, calls, judged *int) {
	c.Judge = func(r verdict.Run) verdict.Judgement {
		*calls++
		j := verdict.JudgeRun(r)
		if j.Shown != nil {
			*judged++
		}
		for _, v := range j.Own {
			if v != nil {
				*judged++
			}
		}
		return j
	}
}

// A refresh judges once: a single trainer, a run of ranks shown with its
// ranks in brief (the screen) and a full view of a run (--once, --json,
// the exporter) make one Judge call a refresh. That call judges the run
// and each rank that has a verdict of its own (Rank.Verdict): the lowest
// rank in brief, every rank in full, as docs/architecture.md says. Three
// refreshes in a row, as --once takes a first reading and then its
// snapshot, count the same each.
func TestJudgeCallsPerRefresh(t *testing.T) {
	names := []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Comm, stage.Optim, stage.Other}
	t0 := time.Unix(1_800_000_000, 0)
	now := t0.Add(5 * time.Second)
	const ranks = 4
	group := func(brief bool) *Group {
		g := newGroup(t.TempDir(), "bench-rank0", "bench")
		for r := range ranks {
			g.feeds[r] = newRankFeed(r, ranks, names, t0, false, 1e6, brief && r > 0)
		}
		return g
	}
	for _, tt := range []struct {
		name   string
		make   func() *Snapshotter
		calls  int
		judged int
	}{
		{"single trainer", func() *Snapshotter { return NewSnapshotter(newRankFeed(0, 1, names, t0, false, 1e6, false)) }, 1, 1},
		{"no trainer yet", func() *Snapshotter { return NewSnapshotter(feed.New(0)) }, 1, 0},
		{"ranks in brief", func() *Snapshotter {
			c := NewSnapshotter(nil)
			c.Group, c.BriefRanks = group(true), true
			return c
		}, 1, 2},
		{"ranks in full", func() *Snapshotter {
			c := NewSnapshotter(nil)
			c.Group = group(false)
			return c
		}, 1, 1 + ranks},
	} {
		c := tt.make()
		var calls, judged int
		countJudge(c, &calls, &judged)
		for i := range 3 {
			calls, judged = 0, 0
			s := c.Snapshot(now.Add(time.Duration(i)*time.Second), Windows[0])
			if calls != tt.calls || judged != tt.judged {
				t.Errorf("%s, refresh %d: %d Judge calls judging %d verdicts, want %d judging %d", tt.name, i, calls, judged, tt.calls, tt.judged)
			}
			if tt.judged > 0 && s.Verdict == nil {
				t.Errorf("%s: no verdict", tt.name)
			}
			if len(s.Ranks) > 0 && s.Ranks[0].Verdict == nil {
				t.Errorf("%s: the lowest rank has no verdict of its own", tt.name)
			}
			if s.Verdict != nil && tt.judged == 0 {
				t.Errorf("%s: a verdict without a trainer", tt.name)
			}
		}
	}
}
