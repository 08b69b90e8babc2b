package feed

import (
	"slices"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/judge"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// slowSteps is a frame of type typ of n steps of 2 s from step from on,
// starting at t0, 70 % of each in data_wait: input-bound.
func slowSteps(typ string, from, n int64, t0 time.Time) *ipc.Frame {
	f := &ipc.Frame{Type: typ}
	for i := range n {
		start := t0.Add(time.Duration(from+i) * 2 * time.Second).UnixNano()
		f.Steps = append(f.Steps, stage.RecordOf(from+i, start, start+2e9, 32, []int64{1.4e9, 0.5e9, 0.1e9}, nil))
	}
	return f
}

// windowSteps is the first and last step number the feed's step window
// holds and how many it holds.
func windowSteps(f *Feed) []int64 {
	first, _ := f.win.First()
	last, _ := f.win.Last()
	return []int64{first.Step, last.Step, int64(f.win.Len())}
}

// A viewer that attaches to a run of 2 s steps judges it from the backfill
// at once: the run's verdict (input-bound), not warming up; without the
// backfill (an older trainer) it is still warming up.
func TestBackfillJudgesAtOnce(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	hello := &ipc.Hello{Name: "run", PID: 42, StartNs: t0.UnixNano(), Stages: names}
	ep := ipc.Endpoint{Path: "/tmp/run.42.sock", Name: "run", PID: 42}
	attach := t0.Add(40 * time.Second) // 20 steps done
	now := attach.Add(time.Second)
	progress := &ipc.Frame{Type: ipc.TypeProgress, Progress: &stage.Progress{TimeNs: now.UnixNano(), Step: 20,
		StepStartNs: attach.UnixNano(), Stage: stage.DataWait, SinceNs: attach.UnixNano(), Done: 20}}
	for _, fill := range []bool{true, false} {
		f := New(1000)
		f.Apply(ipc.Message{Connected: hello, Endpoint: ep}, attach)
		if fill {
			f.Apply(ipc.Message{Frame: slowSteps(ipc.TypeBackfill, 0, 20, t0)}, attach)
		}
		f.Apply(ipc.Message{Frame: progress}, now)
		v := f.View(now, snapshot.Window{Label: "30s", Seconds: 30}, false)
		w, ok := v.Window(now.UnixNano())
		if !ok {
			t.Fatal("no inputs")
		}
		got := judge.Verdict(w)
		switch {
		case fill && (got.Kind != verdict.InputBound || v.Summary.Steps != 15):
			t.Errorf("with the backfill: %s (%s) over %d steps, want input-bound over the 30 s window's 15", got.Kind, got.Headline, v.Summary.Steps)
		case !fill && got.Kind != verdict.WarmingUp:
			t.Errorf("without the backfill: %s (%s), want warming-up", got.Kind, got.Headline)
		}
	}
}

// Steps that came live before the backfill (sent between the attach and
// the trainer reading the viewer's hello) stay after it, each step once.
func TestBackfillGoesBeforeLiveSteps(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	f := New(1000)
	f.Apply(ipc.Message{Connected: &ipc.Hello{Name: "run", PID: 42, Stages: names}}, t0)
	f.Apply(ipc.Message{Frame: slowSteps(ipc.TypeSteps, 20, 2, t0)}, t0)
	f.Apply(ipc.Message{Frame: slowSteps(ipc.TypeBackfill, 10, 11, t0)}, t0) // 10..20: 20 came already
	if got, want := windowSteps(f), []int64{10, 21, 12}; !slices.Equal(got, want) {
		t.Errorf("window (first, last, count) %v, want %v", got, want)
	}
	if n := received(f); n != 2+11 {
		t.Errorf("received %d steps, want 13", n)
	}
	s := f.View(t0, snapshot.Window{Label: "all"}, false).Summary
	if s.Steps != 12 || s.LastStep != 21 {
		t.Errorf("summary of %d steps to %d, want 12 to 21", s.Steps, s.LastStep)
	}
}

// A viewer of agg frames folds the backfill into aggregates of about a
// second each before the first agg frame: its window holds the steps
// before the attach as a viewer of steps does.
func TestBackfillBeforeAggregates(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	hello := &ipc.Hello{Name: "run", PID: 42, StartNs: t0.UnixNano(), Stages: names}
	raw, agg := New(1000), New(1000)
	for _, f := range []*Feed{raw, agg} {
		f.Apply(ipc.Message{Connected: hello}, t0)
		f.Apply(ipc.Message{Frame: slowSteps(ipc.TypeBackfill, 0, 30, t0)}, t0)
	}
	raw.Apply(ipc.Message{Frame: slowSteps(ipc.TypeSteps, 30, 2, t0)}, t0)
	agg.Apply(ipc.Message{Frame: aggOf(slowSteps(ipc.TypeSteps, 30, 2, t0))}, t0)
	if agg.aggs.Len() != 31 {
		t.Errorf("%d aggregates, want one for each 2 s step of the backfill and the agg frame", agg.aggs.Len())
	}
	w := snapshot.Window{Label: "30s", Seconds: 30}
	now := t0.Add(64 * time.Second)
	rs, as := raw.View(now, w, false).Summary, agg.View(now, w, false).Summary
	if rs.Steps != as.Steps || rs.WallMean != as.WallMean || rs.LastStep != as.LastStep {
		t.Errorf("30 s window from aggregates: %d steps to %d, mean %v; from steps %d to %d, mean %v",
			as.Steps, as.LastStep, as.WallMean, rs.Steps, rs.LastStep, rs.WallMean)
	}
	// A backfill after agg frames (no trainer sends one) changes nothing.
	agg.Apply(ipc.Message{Frame: slowSteps(ipc.TypeBackfill, 0, 5, t0)}, t0)
	if agg.win.Len() != 0 || agg.aggs.Len() != 31 {
		t.Errorf("a late backfill joined the window: %v", windowSteps(agg))
	}
}
