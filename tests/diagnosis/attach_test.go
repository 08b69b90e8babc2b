package diagnosis

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// slowStepScenarios are runs of 2 s steps that a one-shot pipetop --json
// attaches to 5 s in: in its 1 s collection at most one step ends, so
// without the trainer's backfill it judged nothing ("warming up"). With it,
// the window holds the steps before the attach and the verdict is the
// run's: the cause planted in examples/auto/slow_steps.py.
func slowStepScenarios() []scenario {
	return []scenario{
		{name: "torch/2 s steps, 75 % reading: input-bound at once", start: autoScript("slow_steps.py", "--read-ms", "1500", "--compute-ms", "500"),
			after: 5 * time.Second, interval: time.Second, kind: verdict.InputBound, stage: stage.DataWait,
			headline: []string{"waits on data_wait", "read_from_storage"}, next: []string{"set num_workers=2 or more"}},
		{name: "torch/2 s steps, 95 % forward: compute-bound at once", start: autoScript("slow_steps.py", "--read-ms", "20", "--compute-ms", "1900"),
			after: 5 * time.Second, interval: time.Second, kind: verdict.ComputeBound, stage: stage.Forward,
			next: []string{"input keeps up"}},
	}
}

// TestAttachJudgesSlowStepsAtOnce: a one-shot --json 5 s into a run of 2 s
// steps gives the run's verdict over the steps before the attach (its 5 s
// window holds at least two) and the stack samples of the same time (more
// than its 1 s collection's), for a viewer of steps and one of agg frames.
func TestAttachJudgesSlowStepsAtOnce(t *testing.T) {
	testkit.Concurrent(t)
	scs := slowStepScenarios()
	results := observeAll(t, scs)
	for i, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			check(t, sc, results[i])
			for _, r := range []result{results[i], *results[i].agg} {
				var snap struct {
					Summary *stage.Summary     `json:"summary"`
					Code    *stage.CodeProfile `json:"code"`
				}
				if err := json.Unmarshal(r.out, &snap); err != nil || snap.Summary == nil {
					t.Fatalf("no summary in %s: %v", r.out, err)
				}
				if snap.Summary.Steps < 2 {
					t.Errorf("the 5 s window holds %d steps after a 1 s collection; want the backfill's 2 or more", snap.Summary.Steps)
				}
				if snap.Code != nil {
					t.Logf("stack samples of %.1f s", float64(snap.Code.SampledNs)/1e9)
				}
				if snap.Code == nil || snap.Code.SampledNs < 3.5e9 {
					t.Errorf("the 5 s window's stack samples stand for %v; want the backfill's 3.5 s or more (1 to 2 s without it)", snap.Code)
				}
			}
		})
	}
}
