package summary

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// epochScript is the run summary: 64 samples, batch 8, 2 workers
// started afresh every epoch at 1.5 s each, so every 8th step waits 1.53
// s on data_wait, its steps written one by one.
func epochScript() Script {
	names := []string{stage.DataWait, stage.Forward, stage.Backward, stage.Optim, stage.Other}
	s := Script{Schema: ScriptSchema, Name: "epochs", Steps: 80, Recent: &RecentSteps{Names: names},
		Loader: &stage.LoaderStats{Source: "torch", Workers: 2, Batch: 8, WorkerBusy: 0.01, WorkerBusyEach: []float64{0.01, 0.01}, Prefetch: 2,
			Length: 8, WorkerStarts: 20, WorkerStartNs: 1.5e9, Site: "train.py:31"}}
	totals := make([]int64, len(names))
	t := int64(1.8e18)
	for i := range int64(80) {
		cpu := []int64{0.1e6, 2e6, 2e6, 0.5e6, 0.2e6}
		if i%8 == 0 {
			cpu[0] = 1.53e9
		}
		var wall int64
		for k, c := range cpu {
			wall += c
			totals[k] += c
		}
		s.Recent.Steps = append(s.Recent.Steps, append([]int64{i, t, t + wall}, cpu...))
		s.WallNs += wall
		t += wall
	}
	s.StepMeanNs = float64(s.WallNs) / 80
	for k, n := range names {
		s.Stages = append(s.Stages, ScriptStage{Name: n, TotalNs: totals[k], MeanNs: float64(totals[k]) / 80, Share: float64(totals[k]) / float64(s.WallNs)})
	}
	return s
}

// TestScriptPauses: the end-of-run verdict of a run whose workers restart
// every epoch names the epoch boundary and persistent_workers, from the
// steps the file carries; the issue's summary said "workers are busy only
// 1 %: look for I/O stalls … or a slow collate_fn". Without the steps (an
// older file) the advice is still persistent_workers.
func TestScriptPauses(t *testing.T) {
	s := epochScript()
	v := s.Judge()
	for _, want := range []string{"every 8th step waits 1.53 s", "one pass over the DataLoader (len 8)", "persistent_workers=True in the DataLoader made at train.py:31"} {
		if !strings.Contains(v.String(), want) {
			t.Errorf("verdict %q lacks %q", v, want)
		}
	}
	if v.Kind != verdict.InputStalls || strings.Contains(v.String(), "collate_fn") {
		t.Errorf("verdict %s: %q", v.Kind, v)
	}
	s.Recent = nil
	if v := s.Judge(); v.Kind != verdict.InputBound || !strings.Contains(v.Next, "persistent_workers=True") || strings.Contains(v.Next, "collate_fn") {
		t.Errorf("without the steps: %s %q", v.Kind, v)
	}
}
