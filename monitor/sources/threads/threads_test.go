package threads

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// fake is a FAKE Sampler replaying readings; the real host.ThreadSampler
// is tested on /proc, a FAKE tree and a real cgroup in metrics/host.
type fake struct {
	pid, training int
	readings      []host.ThreadsReading
	n             int
}

func (f *fake) SetPID(pid, training int)      { f.pid, f.training = pid, training }
func (f *fake) Sample(time.Time) error        { f.n++; return nil }
func (f *fake) Snapshot() host.ThreadsReading { return f.readings[min(f.n, len(f.readings))-1] }

// TestThrottledShareAndPart: the share of periods throttled between two
// refreshes, the training tid passed on, and the part saved and loaded.
func TestThrottledShareAndPart(t *testing.T) {
	q := func(periods, throttled uint64) host.ThreadsReading {
		return host.ThreadsReading{Alive: true, UsableCores: 0.5, AffinityCPUs: 2,
			Quota:   host.CPUQuota{Version: 2, CPUs: 0.5, Periods: periods, Throttled: throttled},
			Threads: []host.ThreadInfo{{PID: 7, TID: 8, Name: "python3", Role: host.RoleTraining, CPU: 50, Wait: 40}}}
	}
	f := &fake{readings: []host.ThreadsReading{q(100, 10), q(200, 90)}}
	s := New(f)
	var snap snapshot.Snapshot
	for range 2 {
		if err := s.Sample(time.Now(), source.Target{PID: 7, TrainingTID: 8}); err != nil {
			t.Fatal(err)
		}
		s.Fill(&snap)
	}
	if f.pid != 7 || f.training != 8 {
		t.Fatalf("sampler watches pid %d tid %d, want 7 and 8", f.pid, f.training)
	}
	th := snap.Threads
	if th == nil || th.Quota.ThrottledShare != 0.8 || th.UsableCores != 0.5 || len(th.Threads) != 1 || th.Threads[0].Role != "training" || th.Pressure != nil {
		t.Fatalf("threads part = %+v, want 80 of 100 periods throttled", th)
	}
	raw, err := Part.Save(&snap)
	if err != nil {
		t.Fatal(err)
	}
	var back snapshot.Snapshot
	if err := Part.Load(&back, raw); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(snap.Threads)
	b, _ := json.Marshal(back.Threads)
	if string(a) != string(b) {
		t.Errorf("part after save and load = %s, want %s", b, a)
	}
	// No trainer: nothing sampled, no part.
	var none snapshot.Snapshot
	s2 := New(&fake{readings: []host.ThreadsReading{q(1, 0)}})
	if err := s2.Sample(time.Now(), source.Target{}); err != nil {
		t.Fatal(err)
	}
	s2.Fill(&none)
	if none.Threads != nil {
		t.Errorf("without a trainer the part is %+v, want nil", none.Threads)
	}
}
