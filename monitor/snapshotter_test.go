package monitor

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
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
