package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

func TestDiagnose(t *testing.T) {
	highAmp := &stage.LoaderStats{Workers: 2, ReadAmp: 1250, WorkerBusy: 1}
	for _, tc := range []struct {
		name     string
		stages   map[string]float64 // ms per step
		gpuFwd   float64            // ms of GPU time on forward (0: no GPU times)
		loader   *stage.LoaderStats
		want     Kind
		stage    string
		contains []string
	}{
		{"input-bound with rechunk advice", map[string]float64{stage.DataWait: 70, stage.Forward: 20, stage.Backward: 10}, 0, highAmp,
			InputBound, stage.DataWait, []string{"70 %", "rechunk", "--chunk-frames 1", "1250x"}},
		{"input-bound on GPU names GPU idle", map[string]float64{stage.DataWait: 71, stage.Forward: 29}, 29, nil,
			InputBound, stage.DataWait, []string{"GPU idles 71 %"}},
		{"input-bound, inline loader", map[string]float64{stage.DataWait: 50, stage.Forward: 50}, 0, &stage.LoaderStats{Workers: 0, ReadAmp: 1},
			InputBound, stage.DataWait, []string{"--workers"}},
		{"input-bound, busy workers", map[string]float64{stage.DataWait: 50, stage.Forward: 50}, 0, &stage.LoaderStats{Workers: 2, ReadAmp: 1, WorkerBusy: 0.97},
			InputBound, stage.DataWait, []string{"all 2 loader workers are busy 97 %"}},
		{"input-bound, busy torch DataLoader workers", map[string]float64{stage.DataWait: 50, stage.Forward: 50}, 0,
			&stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.98, Cores: 8},
			InputBound, stage.DataWait, []string{"2 workers are busy 98 %: raise num_workers to 6; 5 cores idle"}},
		{"input-bound, torch DataLoader inline", map[string]float64{stage.DataWait: 50, stage.Forward: 50}, 0, &stage.LoaderStats{Source: "torch"},
			InputBound, stage.DataWait, []string{"num_workers=2"}},
		{"input-bound, idle torch workers", map[string]float64{stage.DataWait: 50, stage.Forward: 50}, 0,
			&stage.LoaderStats{Source: "torch", Workers: 4, WorkerBusy: 0.3, Prefetch: 2, QueueCap: 8},
			InputBound, stage.DataWait, []string{"busy only 30 %", "prefetch_factor (2, 0/8"}},
		{"gpu-bound", map[string]float64{stage.DataWait: 1, stage.Forward: 40, stage.Backward: 50, stage.Sync: 9}, 95, nil,
			GPUBound, "", []string{"GPU is busy 95 %"}},
		{"launch-bound", map[string]float64{stage.Forward: 50, stage.Backward: 40, stage.Other: 10}, 8, nil,
			LaunchBound, "", []string{"GPU is busy 8 %", "batch"}},
		{"sync-bound", map[string]float64{stage.Forward: 30, stage.Sync: 60, stage.Other: 10}, 0, nil,
			SyncBound, stage.Sync, []string{"60 %", "--log-every"}},
		{"untimed", map[string]float64{stage.Forward: 40, stage.Other: 60}, 0, nil,
			Untimed, stage.Other, []string{"60 %"}},
		{"planted sleep in a custom stage", map[string]float64{"augment": 80, stage.Forward: 20}, 0, nil,
			StageBound, "augment", []string{"augment-bound", "80 %"}},
		{"compute-bound on CPU", map[string]float64{stage.DataWait: 5, stage.Forward: 40, stage.Backward: 45, stage.Optim: 10}, 0, nil,
			ComputeBound, stage.Backward, []string{"95 %", "most in backward (45 %)"}},
		{"planted sleep in forward on CPU", map[string]float64{stage.DataWait: 2, stage.Forward: 90, stage.Backward: 5, stage.Optim: 3}, 0, nil,
			ComputeBound, stage.Forward, []string{"most in forward (90 %)"}},
		{"balanced", map[string]float64{stage.DataWait: 5, stage.Forward: 25, stage.Backward: 20, stage.Sync: 15, stage.Other: 15, "augment": 20}, 0, nil,
			Balanced, "", []string{"forward 25 %"}},
		{"moderately input-bound says the gain", map[string]float64{stage.DataWait: 20, stage.Forward: 40, stage.Backward: 40}, 0, nil,
			ModerateInput, stage.DataWait, []string{"20 %", "1.25x faster", "100 ms → 80.0 ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := plantedWith(50, tc.stages, tc.gpuFwd)
			v := Diagnose(s, tc.loader)
			if v.Kind != tc.want || v.Stage != tc.stage {
				t.Fatalf("got %s/%q (%s), want %s/%q", v.Kind, v.Stage, v, tc.want, tc.stage)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			if v.Next == "" {
				t.Error("no next step")
			}
		})
	}
}

func TestDiagnoseWarmingUp(t *testing.T) {
	v := Diagnose(plantedWith(3, map[string]float64{stage.DataWait: 90, stage.Forward: 10}, 0), nil)
	if v.Kind != WarmingUp {
		t.Fatalf("got %s", v)
	}
}

// plantedWith summarizes n steps of the canonical stages and of any custom
// ones in stages (before other), each stage taking stages[name] ms; forward
// also takes gpuFwdMs ms on the GPU when that is above 0.
func plantedWith(n int, stages map[string]float64, gpuFwdMs float64) stage.Summary {
	names := append([]string(nil), stage.Canonical[:len(stage.Canonical)-1]...)
	for name := range stages {
		if !stage.IsKnown(name) {
			names = append(names, name)
		}
	}
	names = append(names, stage.Other)
	w := stage.NewStepRing(names, 1024)
	var t0 int64
	for i := 0; i < n; i++ {
		r := stage.Record{Step: int64(i), NumStages: len(names), Samples: 64}
		r.ClearGPU()
		var sum int64
		for k, name := range names {
			r.CPU[k] = int64(stages[name] * 1e6)
			sum += r.CPU[k]
			if gpuFwdMs > 0 {
				r.GPU[k] = 0
				if name == stage.Forward {
					r.GPU[k] = int64(gpuFwdMs * 1e6)
				}
			}
		}
		r.StartNs, r.EndNs = t0, t0+sum
		t0 = r.EndNs
		w.Add(&r)
	}
	return w.Summarize(0)
}

func TestInputAdviceNamesEveryFinding(t *testing.T) {
	for _, tc := range []struct {
		l        *stage.LoaderStats
		want     []string
		dontWant []string
	}{
		{&stage.LoaderStats{Workers: 0, ReadAmp: 125}, []string{"rechunk", "--workers 2"}, nil},
		{&stage.LoaderStats{Workers: 2, ReadAmp: 125, WorkerBusy: 0.5}, []string{"rechunk"}, []string{"inline", "busy only"}},
		{&stage.LoaderStats{Workers: 2, ReadAmp: 1, WorkerBusy: 0.5, QueueDepth: 0, QueueCap: 2}, []string{"busy only 50 %", "0/2"}, nil},
		{nil, []string{"workers"}, nil},
	} {
		got := InputAdvice(tc.l)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("InputAdvice(%+v) = %q, lacks %q", tc.l, got, w)
			}
		}
		for _, w := range tc.dontWant {
			if strings.Contains(got, w) {
				t.Errorf("InputAdvice(%+v) = %q, should not say %q", tc.l, got, w)
			}
		}
	}
}

func TestRechunkAdviceNamesTheDataset(t *testing.T) {
	l := stage.LoaderStats{Dataset: "data/demo.zarr/", Workers: 2, ReadAmp: 300, WorkerBusy: 0.5}
	if got := InputAdvice(&l); !strings.Contains(got, "pipetrain data rechunk data/demo.zarr data/demo-rechunked.zarr --chunk-frames 1") {
		t.Fatalf("advice %q does not name the dataset", got)
	}
	l.Dataset = ""
	if got := InputAdvice(&l); !strings.Contains(got, "rechunk SRC DST") {
		t.Fatalf("advice %q: an unknown dataset should read SRC DST", got)
	}
}

// After a tune of the script, the input-bound verdict cites what was
// measured instead of the rule's guess.
func TestInputBoundCitesTheTune(t *testing.T) {
	waiting := plantedWith(50, map[string]float64{stage.DataWait: 80, stage.Forward: 10, stage.Backward: 10}, 0)
	l := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.99}
	in := Inputs{Summary: waiting, Loader: l, Complete: true}
	guess := Judge(in)
	in.Measured = &Measured{Advice: "num_workers=4, worker threads 1", SpeedUp: 2.1, File: "/w/tune.json"}
	v := Judge(in)
	if v.Kind != InputBound || guess.Kind != InputBound {
		t.Fatalf("kinds %s, %s", guess.Kind, v.Kind)
	}
	for _, want := range []string{"measured by pipetop tune (/w/tune.json)", "num_workers=4, worker threads 1 gave 2.10x", "pipetop run --apply /w/tune.json"} {
		if !strings.Contains(v.Next, want) {
			t.Errorf("next %q lacks %q", v.Next, want)
		}
	}
	if strings.Contains(v.Next, "raise num_workers") || !strings.Contains(guess.Next, "num_workers") {
		t.Errorf("guess %q, measured %q", guess.Next, v.Next)
	}
	in.Measured = &Measured{SpeedUp: 1, File: "/w/tune.json"}
	if v := Judge(in); !strings.Contains(v.Next, "none beat its own") {
		t.Errorf("a tune that found nothing: %q", v.Next)
	}
}
