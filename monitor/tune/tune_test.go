package tune

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
)

// loaderModel is a named fake of a script's loader for the search's logic
// (the real trials are tested in tests/tune): samples/s as a function of
// the setting the trial's plan applies.
type loaderModel func(s Setting) (rate, cores float64)

// fakeTuner is a tuner whose trials answer from model instead of running
// a script.
func fakeTuner(t *testing.T, base Setting, cores int, model loaderModel) *tuner {
	dir := t.TempDir()
	r := &Report{DataLoader: &verdict.DataLoaderCall{Site: "train.py:42", NumWorkers: base.NumWorkers}, Baseline: base, Tuned: TunedLoader}
	tu := newTuner(Config{Cores: cores, Rounds: 3, Log: io.Discard, Bisect: bisect.Config{Dir: dir}}, r, nil)
	tu.run = func(_ context.Context, tr bisect.Trial) verdict.PhaseResult {
		s := settingOf(t, tr.Env)
		applied(t, tr.Env, "train.py:42")
		rate, c := model(s)
		return verdict.PhaseResult{Name: tr.Phase, Status: verdict.PhaseOK, Steps: 100, SamplesPerSec: rate, CPUCores: c}
	}
	return tu
}

// applied writes the report a script writes when its plan reached the
// DataLoader at site ("" : reached none) to the trial's PIPETOP_PLAN_OUT.
func applied(t *testing.T, env []string, site string) {
	for _, kv := range env {
		dir, ok := strings.CutPrefix(kv, "PIPETOP_PLAN_OUT=")
		if !ok {
			continue
		}
		r := PlanReport{Schema: PlanReportSchema, PID: 7, Notes: []string{"a note"}}
		if site != "" {
			r.Applied = []AppliedLoader{{Site: site, Loaders: 1}}
		}
		b, _ := json.Marshal(r)
		if err := os.WriteFile(filepath.Join(dir, "plan-7.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no PIPETOP_PLAN_OUT in %v", env)
}

// A trial whose plan reached no DataLoader measured the script's own
// settings: it fails, with the script's note, and never wins.
func TestPlanThatReachedNothingFails(t *testing.T) {
	tu := fakeTuner(t, Setting{NumWorkers: 2}, 2, func(Setting) (float64, float64) { return 100, 1 })
	tu.run = func(_ context.Context, tr bisect.Trial) verdict.PhaseResult {
		applied(t, tr.Env, "")
		return verdict.PhaseResult{Name: tr.Phase, Status: verdict.PhaseOK, Steps: 100, SamplesPerSec: 100}
	}
	tr := tu.trial(context.Background(), verdict.PhaseLoader, Setting{NumWorkers: 4}, false)
	if tr.Status != verdict.PhaseFailed || tr.SamplesPerSec != 0 || !slices.Contains(tr.Notes, "a note") ||
		!slices.Contains(tr.Notes, "the plan reached no DataLoader: the trial ran the script's own settings") {
		t.Errorf("trial %+v", tr)
	}
}

// settingOf reads back the setting a trial's plan file applies.
func settingOf(t *testing.T, env []string) Setting {
	for _, kv := range env {
		path, ok := strings.CutPrefix(kv, "PIPETOP_PLAN=")
		if !ok {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var p Plan
		if err := json.Unmarshal(b, &p); err != nil || p.Schema != PlanSchema || p.Loader == nil || p.Loader.Site != "train.py:42" {
			t.Fatalf("plan %s: %v %+v", path, err, p)
		}
		s := Setting{NumWorkers: *p.Loader.NumWorkers, PersistentWorkers: *p.Loader.PersistentWorkers}
		if p.Loader.PrefetchFactor != nil {
			s.PrefetchFactor = *p.Loader.PrefetchFactor
		}
		if p.Loader.WorkerThreads != nil {
			s.WorkerThreads = *p.Loader.WorkerThreads
		}
		if p.Threads != nil && p.Threads.Main != nil {
			s.MainThreads = *p.Threads.Main
		}
		return s
	}
	t.Fatalf("no plan in %v", env)
	return Setting{}
}

// The search finds each planted loader's best setting, the confirmation
// picks the cheapest within the noise, and the change names the call.
func TestSearchFindsThePlantedBest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		base  Setting
		model loaderModel
		want  Setting
	}{
		{"CPU-bound items: workers up to the cores", Setting{NumWorkers: 0}, func(s Setting) (float64, float64) {
			return 100 * float64(min(max(s.NumWorkers, 1), 2)), float64(min(s.NumWorkers, 2))
		}, Setting{NumWorkers: 2, WorkerThreads: 0}},
		{"storage waits: many more workers than cores", Setting{NumWorkers: 1}, func(s Setting) (float64, float64) {
			return 50 * float64(min(max(s.NumWorkers, 1), 16)), 0.05 * float64(s.NumWorkers)
		}, Setting{NumWorkers: 16}},
		{"threaded workers: one thread each wins", Setting{NumWorkers: 2}, func(s Setting) (float64, float64) {
			if s.WorkerThreads == 1 {
				return 100 * float64(min(max(s.NumWorkers, 1), 2)), 2
			}
			return 60 / float64(max(s.NumWorkers, 1)), 2
		}, Setting{NumWorkers: 2, WorkerThreads: 1}},
		{"worker starts each epoch: persistent workers, then as many as the cores", Setting{NumWorkers: 2}, func(s Setting) (float64, float64) {
			// 64 items of 3 ms on 2 cores; a worker start costs 1 s, paid
			// every epoch unless the workers persist.
			epoch := 64 * 0.003 / float64(min(max(s.NumWorkers, 1), 2))
			if s.NumWorkers > 0 && !s.PersistentWorkers {
				epoch++
			}
			return 64 / epoch, float64(min(s.NumWorkers, 2))
		}, Setting{NumWorkers: 2, PersistentWorkers: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tu := fakeTuner(t, tc.base, 2, tc.model)
			tu.tune(context.Background())
			if w := tu.r.Winner; w == nil || w.Setting.NumWorkers != tc.want.NumWorkers || w.Setting.WorkerThreads != tc.want.WorkerThreads || w.Setting.PersistentWorkers != tc.want.PersistentWorkers {
				t.Fatalf("winner %+v, want %+v; trials %+v", tu.r.Winner, tc.want, tu.r.Trials)
			}
			if tu.r.SpeedUp <= 1 || len(tu.r.Change) == 0 || !strings.HasPrefix(tu.r.Change[0], "train.py:42: DataLoader(") {
				t.Errorf("speed-up %.2f, change %q", tu.r.SpeedUp, tu.r.Change)
			}
			for _, tr := range tu.r.Trials {
				if tr.Setting.valid() != "" && tr.Status != verdict.PhaseSkipped {
					t.Errorf("a setting torch refuses ran: %+v", tr)
				}
			}
		})
	}
}

// The winner is the cheapest within the noise of the fastest, not the
// fastest by a hair; the baseline wins when nothing beats it.
func TestWinnerIsTheCheapestWithinTheNoise(t *testing.T) {
	cs := []Candidate{
		{Setting: Setting{NumWorkers: 1}, Median: 100, Min: 98, Max: 102, Baseline: true},
		{Setting: Setting{NumWorkers: 8}, Median: 181, Min: 175, Max: 190},
		{Setting: Setting{NumWorkers: 4}, Median: 178, Min: 170, Max: 185},
	}
	w, base := winner(cs)
	if w.Setting.NumWorkers != 4 || !base.Baseline {
		t.Errorf("winner %+v", w)
	}
	cs = []Candidate{{Setting: Setting{NumWorkers: 2}, Median: 100, Min: 95, Max: 105, Baseline: true}, {Setting: Setting{NumWorkers: 4}, Median: 102, Min: 97, Max: 106}}
	if w, _ := winner(cs); !w.Baseline {
		t.Errorf("a setting within the noise beat the script's own: %+v", w)
	}
}

// A trial refused by the memory guard ends the workers' doubling.
func TestRefusedTrialStopsTheSweep(t *testing.T) {
	tu := fakeTuner(t, Setting{NumWorkers: 0}, 2, func(s Setting) (float64, float64) { return 10 * float64(s.NumWorkers+1), 0.1 })
	inner := tu.run
	tu.run = func(ctx context.Context, tr bisect.Trial) verdict.PhaseResult {
		p := inner(ctx, tr)
		if settingOf(t, tr.Env).NumWorkers >= 4 {
			p.Status, p.Notes = verdict.PhaseRefused, []string{"memory"}
		}
		return p
	}
	tu.searchLoader(context.Background(), scores{})
	for _, tr := range tu.r.Trials {
		if tr.Setting.NumWorkers > 4 {
			t.Errorf("the sweep went on past a refused trial: %+v", tr)
		}
	}
}

// decide reads the bisect's verdict.
func TestDecide(t *testing.T) {
	for kind, want := range map[verdict.Kind]string{verdict.InputBound: TunedLoader, verdict.Balanced: TunedThreads,
		verdict.TrainingThreadBound: TunedThreads, verdict.Contention: TunedThreads, verdict.ComputeBound: "", verdict.GPUBound: ""} {
		if got, _ := decide(verdict.Verdict{Kind: kind}); got != want {
			t.Errorf("%s: %q, want %q", kind, got, want)
		}
	}
}

// PlanOf reads a tune report's winner and refuses a report without one.
func TestPlanOf(t *testing.T) {
	dir := t.TempDir()
	two := 2
	r := Report{Schema: Schema, Plan: &Plan{Schema: PlanSchema, Loader: &LoaderPlan{Site: "t.py:3", NumWorkers: &two}}}
	b, _ := json.Marshal(r)
	path := filepath.Join(dir, "tune.json")
	os.WriteFile(path, b, 0o600)
	p, err := PlanOf(path)
	if err != nil || *p.Loader.NumWorkers != 2 {
		t.Errorf("plan %+v, %v", p, err)
	}
	r.Plan, r.Tuned, r.Reason = nil, "", "compute-bound"
	b, _ = json.Marshal(r)
	os.WriteFile(path, b, 0o600)
	if _, err := PlanOf(path); err == nil || !strings.Contains(err.Error(), "compute-bound") {
		t.Errorf("a report without a plan: %v", err)
	}
	os.WriteFile(path, []byte(`{"schema":"x"}`), 0o600)
	if _, err := PlanOf(path); err == nil || !strings.Contains(err.Error(), `schema "x"`) {
		t.Errorf("another file: %v", err)
	}
}

// A loader that ignores its settings: every trial alike, and the table
// says the settings made no difference.
func TestSettingsWithoutEffect(t *testing.T) {
	tu := fakeTuner(t, Setting{NumWorkers: 2}, 2, func(Setting) (float64, float64) { return 100, 0.5 })
	tu.tune(context.Background())
	if !tu.r.NoEffect() {
		t.Fatalf("trials %+v", tu.r.Trials)
	}
	var b strings.Builder
	tu.r.WriteTable(&b)
	if !strings.Contains(b.String(), "no setting changed the loader's samples/s") {
		t.Errorf("table:\n%s", b.String())
	}
}

// The finalists are the fastest and the cheapest within the search's noise
// of it, not the two fastest by a hair.
func TestFinalistsIncludeTheCheapestNearTheFastest(t *testing.T) {
	base := Setting{}
	sc := scores{
		base:                                     {SamplesPerSec: 500},
		{NumWorkers: 4, PrefetchFactor: 4}:       {SamplesPerSec: 875},
		{NumWorkers: 4, PersistentWorkers: true}: {SamplesPerSec: 825},
		{NumWorkers: 2, PersistentWorkers: true}: {SamplesPerSec: 815},
		{NumWorkers: 1}:                          {SamplesPerSec: 600},
	}
	got := sc.best(2, base)
	want := []Setting{{NumWorkers: 4, PrefetchFactor: 4}, {NumWorkers: 2, PersistentWorkers: true}}
	if !slices.Equal(got, want) {
		t.Errorf("finalists %v, want %v", got, want)
	}
	if got := sc.best(3, base); len(got) != 3 || got[2] != (Setting{NumWorkers: 4, PersistentWorkers: true}) {
		t.Errorf("3 finalists %v", got)
	}
	if got := (scores{base: {SamplesPerSec: 500}}).best(2, base); got != nil {
		t.Errorf("nothing beats the baseline, finalists %v", got)
	}
}

// A search where nothing beat the script's settings and more workers were
// refused for memory advises keeping them, and says what was refused.
func TestNoWinnerSaysWhy(t *testing.T) {
	base := Setting{NumWorkers: 2, PrefetchFactor: 2}
	r := Report{Tuned: TunedLoader, Baseline: base, Trials: []Trial{
		{Setting: base, Status: verdict.PhaseOK, SamplesPerSec: 370},
		{Setting: Setting{NumWorkers: 1, PrefetchFactor: 2}, Status: verdict.PhaseOK, SamplesPerSec: 170},
		{Setting: Setting{NumWorkers: 4, PrefetchFactor: 2}, Status: verdict.PhaseRefused},
	}}
	var out strings.Builder
	r.writeAdvice(&out)
	for _, want := range []string{"keep the script's settings", "the memory guard stopped 1", "num_workers=4, prefetch_factor=2"} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
			t.Errorf("advice %q lacks %q", out.String(), want)
		}
	}
	r.Trials = r.Trials[2:]
	if got := r.noWinner(); got != "no setting was measured in full runs" {
		t.Errorf("without a measured baseline: %q", got)
	}
}

// The table shows the bisect's loader phase: its workers and each source
// it read, here a video stream.
func TestTableShowsTheLoaderPhase(t *testing.T) {
	l := &stage.LoaderStats{Workers: 2, WorkerBusy: 1, ReadAmp: 108.8,
		Video: []stage.VideoStream{{File: "/d/cam0.mp4", Codec: "h264", Width: 96, Height: 96, GOP: 250, Opens: 10, Calls: 10, FramesDecoded: 1088, FramesReturned: 10, ReadAmp: 108.8}}}
	r := Report{Schema: Schema, Command: []string{"python3", "train.py"}, Reason: "input-bound"}
	r.Bisect.Phases = []verdict.PhaseResult{{Name: verdict.PhaseLoader, Status: verdict.PhaseOK, Steps: 9, StepsPerSec: 3, SamplesPerSec: 24, Loader: l}}
	var b strings.Builder
	r.WriteTable(&b)
	for _, want := range []string{"loader: 2 workers busy 100 %, read amplification 108.8x", "video: /d/cam0.mp4 h264 96x96, a keyframe every 250 frames"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
