package summary

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// stepsScript fills s with n steps of the stage list names, written one
// by one (cpu(i) is step i's time in each stage): its totals, means and
// recent steps.
func stepsScript(s Script, names []string, n int64, cpu func(i int64) []int64) Script {
	s.Recent = &RecentSteps{Names: names}
	totals := make([]int64, len(names))
	t := int64(1.8e18)
	for i := range n {
		c := cpu(i)
		var wall int64
		for k, x := range c {
			wall += x
			totals[k] += x
		}
		s.Recent.Steps = append(s.Recent.Steps, append([]int64{i, t, t + wall}, c...))
		s.WallNs += wall
		t += wall
	}
	s.Steps, s.EndNs, s.StepMeanNs = n, t, float64(s.WallNs)/float64(n)
	for k, name := range names {
		s.Stages = append(s.Stages, ScriptStage{Name: name, TotalNs: totals[k], MeanNs: float64(totals[k]) / float64(n), Share: float64(totals[k]) / float64(s.WallNs)})
	}
	return s
}

// pauseNames is the stage list of the pause plants' summaries.
var pauseNames = []string{stage.DataWait, stage.Forward, stage.Backward, stage.Optim, stage.Other}

// epochScript is the run summary: 64 samples, batch 8, 2 workers
// started afresh every epoch at 1.5 s each, so every 8th step waits 1.53
// s on data_wait, its steps written one by one.
func epochScript() Script {
	s := Script{Schema: ScriptSchema, Name: "epochs",
		Loader: &stage.LoaderStats{Source: "torch", Workers: 2, Batch: 8, WorkerBusy: 0.01, WorkerBusyEach: []float64{0.01, 0.01}, Prefetch: 2,
			Length: 8, WorkerStarts: 20, WorkerStartNs: 1.5e9, Site: "train.py:31"}}
	return stepsScript(s, pauseNames, 80, func(i int64) []int64 {
		cpu := []int64{0.1e6, 2e6, 2e6, 0.5e6, 0.2e6}
		if i%8 == 0 {
			cpu[0] = 1.53e9
		}
		return cpu
	})
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

// checkpointScript is a run that logs on every step (5 ms, untimed) and
// saves a checkpoint every 25 steps (188 ms, untimed), its steps written
// one by one and its stack samples one whole-run frame, in which the
// logging outweighs the saves.
func checkpointScript() Script {
	s := stepsScript(Script{Schema: ScriptSchema, Name: "saves"}, pauseNames, 100, func(i int64) []int64 {
		cpu := []int64{0.1e6, 2e6, 2e6, 0.5e6, 5e6}
		if i%25 == 24 {
			cpu[4] += 188e6
		}
		return cpu
	})
	frames := []stage.CodeFrame{{Name: "<module>", File: "train.py", Line: 60}, {Name: "log_metrics", File: "train.py", Line: 20},
		{Name: "save_checkpoint", File: "train.py", Line: 30}, {Name: "save", File: "torch/serialization.py", Line: 423, Lib: "torch"}}
	s.Stacks = &stage.StackSamples{TimeNs: s.EndNs, Hz: 100, Frames: frames, Rows: []stage.StackRow{
		{Role: stage.RoleTrain, Stage: stage.Other, Stack: []int{0, 1}, N: 50, Ns: 500e6},
		{Role: stage.RoleTrain, Stage: stage.Other, Stack: []int{0, 2, 3}, N: 38, Ns: 376e6}}}
	return s
}

// TestKeptPauseCode: the whole-run frame of a run that logs on every step
// and saves every 25 steps names the logging; with the pauses' own samples
// pipetop run's live view kept, the end-of-run verdict names the save, a
// checkpoint, and the file keeps them (pause_code) for the next reader.
func TestKeptPauseCode(t *testing.T) {
	s := checkpointScript()
	if v := s.Judge(); v.Kind != verdict.Untimed || !strings.Contains(v.Headline, "log_metrics") {
		t.Fatalf("from the whole-run frame: %s, want untimed naming log_metrics", v)
	}
	save := stage.ProfileOf(&stage.StackSamples{TimeNs: 1, IntervalNs: 1e9, Hz: 100, Frames: s.Stacks.Frames,
		Rows: []stage.StackRow{{Role: stage.RoleTrain, Stage: stage.Other, Stack: []int{0, 2, 3}, N: 38, Ns: 376e6}}})
	dir := t.TempDir()
	path := filepath.Join(dir, "pipetop-summary-saves-41.json")
	s.PID = 41
	if err := writeJSON(path, s); err != nil {
		t.Fatal(err)
	}
	files, errs, err := ReadScripts(dir, time.Unix(0, 0), map[int]Kept{41: {Pauses: save.Groups}})
	if err != nil || len(errs) != 0 || len(files) != 1 {
		t.Fatalf("ReadScripts = %d files, %v, %v", len(files), errs, err)
	}
	want := []string{"100 % of each pause under torch `save`", "a checkpoint: torch `save` called from `save_checkpoint` at train.py:30 writes every 25 steps"}
	for _, v := range []*verdict.Verdict{files[0].Verdict, nil} {
		if v == nil {
			back, err := ReadScript(path)
			if err != nil || len(back.PauseCode) != 1 {
				t.Fatalf("read back: pause_code %+v, %v", back.PauseCode, err)
			}
			j := back.Judge()
			v = &j
		}
		for _, w := range want {
			if !strings.Contains(v.String(), w) {
				t.Errorf("verdict %q lacks %q", v, w)
			}
		}
	}
}
