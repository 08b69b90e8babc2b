package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// loaderSlows is 1,000 steps from start of 10 ms compute whose data_wait
// goes from 1 ms to 6 ms at step 600.
func loaderSlows(start int64) *stage.StepRing {
	return run(start, 1000, func(i int) map[string]int64 {
		m := steadyTimes(ms1)(i)
		if i >= 600 {
			m[stage.DataWait] = 6 * ms1
		}
		return m
	})
}

// TestDriftNeedsBaseline: drift is judged only from a baseline of at
// least DriftBaseNs and DriftBaseMin steps, and a stage that was already
// the baseline's bottleneck is that bottleneck, not drift (the issue's
// pipetrain without loader workers: data_wait 49 % from the first step,
// "drift: steps are 25 % slower than in the run's first 1.1 s").
func TestDriftNeedsBaseline(t *testing.T) {
	const start = int64(1e18)
	grows := loaderSlows(start)
	// data_wait ~50 % from the first step, a quarter slower later.
	inputBound := run(start, 1000, func(i int) map[string]int64 {
		m := map[string]int64{stage.DataWait: 86 * ms1, stage.Forward: 60 * ms1, stage.Backward: 25 * ms1, stage.Optim: 5 * ms1}
		if i >= 600 {
			m[stage.DataWait] = 115 * ms1
			m[stage.Forward] = 75 * ms1
		}
		return m
	})
	// data_wait 15 % from the start (moderate), then the loader slows.
	moderate := run(start, 1000, func(i int) map[string]int64 {
		m := steadyTimes(2 * ms1)(i)
		if i >= 600 {
			m[stage.DataWait] = 12 * ms1
		}
		return m
	})
	short := grows.SummarizeBetween(BaselineSkip, 0, start+int64(100*11*ms1)) // 1.1 s, 95 steps
	for _, tc := range []struct {
		name     string
		w        *stage.StepRing
		baseEnd  int64 // the baseline's last step ends by this many ns after the start
		want     Kind
		contains string
	}{
		{"a real baseline: drift", grows, 500 * 11 * ms1, Drift, "data_wait grew from 9 % to"},
		{"input-bound from the start: input-bound", inputBound, 40 * 176 * ms1, InputBound, "waits on data_wait"},
		{"moderate at the start, then the loader slowed: drift", moderate, 500 * 12 * ms1, Drift, "data_wait grew from 17 %"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.w.SummarizeBetween(BaselineSkip, 0, start+tc.baseEnd)
			v := Judge(Inputs{Summary: tc.w.Summarize(1e9), Baseline: &b})
			if v.Kind != tc.want || !strings.Contains(v.String(), tc.contains) {
				t.Errorf("baseline of %d steps over %s: %s %q, want %s with %q", b.Steps, secs(float64(b.SpanNs)), v.Kind, v, tc.want, tc.contains)
			}
		})
	}
	if v := Judge(Inputs{Summary: grows.Summarize(1e9), Baseline: &short}); v.Kind == Drift {
		t.Errorf("a baseline of %d steps over %s: %q", short.Steps, secs(float64(short.SpanNs)), v)
	}
	few := grows.SummarizeBetween(BaselineSkip, 0, start+int64(20*11*ms1))
	few.SpanNs = 6e9 // long enough, but 15 steps
	if v := Judge(Inputs{Summary: grows.Summarize(1e9), Baseline: &few}); v.Kind == Drift {
		t.Errorf("a baseline of %d steps: %q", few.Steps, v)
	}
}

// TestDriftBaselineOfALateViewer: a viewer that attached well past the
// run's start does not call its baseline the run's first seconds.
func TestDriftBaselineOfALateViewer(t *testing.T) {
	const start = int64(1e18)
	grows := loaderSlows(start)
	for _, tc := range []struct {
		name  string
		skip  int   // steps before the baseline's first
		first int64 // the first step the viewer saw
		want  string
	}{
		{"from the run's start", BaselineSkip, 0, "slower than in the run's first 6.4 s"},
		{"attached 50 steps in (fewer than the baseline's)", 50, 50, "slower than in the run's first 5.9 s"},
		{"attached at step 1000 (more than the baseline's)", 100, 1000, "slower than in the first 5.4 s seen (from step 100)"},
	} {
		b := grows.SummarizeBetween(tc.skip, 0, start+int64(590*11*ms1))
		seen := NewBaseline(nil)
		for i := tc.first; i < tc.first+3; i++ {
			seen.Add(&stage.Record{Step: int64(i), EndNs: start + int64(i)})
		}
		if v := Judge(Inputs{Summary: grows.Summarize(1e9), Baseline: &b, BaselineFirst: seen.First()}); v.Kind != Drift || !strings.Contains(v.Headline, tc.want) {
			t.Errorf("%s: %q, want drift with %q", tc.name, v, tc.want)
		}
	}
}
