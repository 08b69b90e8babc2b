package summary

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// slowingScript is a 60 s run of steps of 8 ms forward whose data_wait
// is wait(t) ms for a step starting t seconds in: its totals, a timeline
// point each second and its newest steps one by one.
func slowingScript(wait func(sec float64) float64) Script {
	names := []string{stage.DataWait, stage.Forward}
	s := Script{Schema: ScriptSchema, Name: "slowing", Recent: &RecentSteps{Names: names}}
	const t0 = int64(1.8e18)
	t, totals := t0, map[string]int64{}
	next := t0 + 1e9
	for t < t0+60e9 {
		cpu := []int64{int64(wait(float64(t-t0)/1e9) * 1e6), 8e6}
		wall := cpu[0] + cpu[1]
		s.Recent.Steps = append(s.Recent.Steps, append([]int64{s.Steps, t, t + wall}, cpu...))
		if len(s.Recent.Steps) > 4096 {
			s.Recent.Steps = s.Recent.Steps[1:]
		}
		for k, n := range names {
			totals[n] += cpu[k]
		}
		s.Steps++
		s.WallNs += wall
		t += wall
		if t >= next {
			s.Timeline = append(s.Timeline, TimePoint{T: next, Steps: s.Steps, WallNs: s.WallNs,
				Stages: map[string]int64{stage.DataWait: totals[stage.DataWait], stage.Forward: totals[stage.Forward]}})
			next += 1e9
		}
	}
	s.EndNs, s.StepMeanNs = t, float64(s.WallNs)/float64(s.Steps)
	for _, n := range names {
		s.Stages = append(s.Stages, ScriptStage{Name: n, TotalNs: totals[n], MeanNs: float64(totals[n]) / float64(s.Steps), Share: float64(totals[n]) / float64(s.WallNs)})
	}
	return s
}

// TestScriptDrift: a run whose data_wait grows from 0.4 ms to 12 ms a
// step 25 s in drifted (its first 20 s against its newest 30 s: the
// baseline rule of the live view, verdict.Baseline.At, over the timeline's
// one-second spans); one that waited 12 ms from the start is input-bound,
// not drift; a file without a timeline (older) is judged as before.
func TestScriptDrift(t *testing.T) {
	slowing := slowingScript(func(sec float64) float64 {
		if sec >= 25 {
			return 12
		}
		return 0.4
	})
	v := slowing.Judge()
	if v.Kind != verdict.Drift || v.Stage != stage.DataWait {
		t.Fatalf("slowing storage: %s, want drift in data_wait", v)
	}
	for _, want := range []string{"slower than in the run's first 20 s", "data_wait grew from 5 % to 60 %"} {
		if !strings.Contains(v.Headline, want) {
			t.Errorf("headline %q lacks %q", v.Headline, want)
		}
	}
	steady := slowingScript(func(float64) float64 { return 12 })
	if v := steady.Judge(); v.Kind != verdict.InputBound {
		t.Errorf("waiting from the start: %s, want input-bound", v)
	}
	slowing.Timeline = nil
	if v := slowing.Judge(); v.Kind == verdict.Drift {
		t.Errorf("without a timeline: %s, want what the means and pauses say, as before", v)
	}
}
