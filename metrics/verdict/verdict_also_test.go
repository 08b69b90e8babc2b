package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// prepStages are a Python loop's stages with preprocessing.
var prepStages = []string{stage.DataWait, stage.Preprocess, stage.Forward, stage.Backward, stage.Optim, stage.Other, stage.Eval}

// loopWindow is the summary of n steps of prepStages back to back, each
// stage's time in ms from times(step).
func loopWindow(n int, times func(step int) map[string]float64) stage.Summary {
	w := stage.NewStepRing(prepStages, 4096)
	var t0 int64
	for i := range n {
		r := stage.Record{Step: int64(i), NumStages: len(prepStages), Samples: 8}
		r.ClearGPU()
		var sum int64
		m := times(i)
		for k, name := range prepStages {
			r.CPU[k] = int64(m[name] * 1e6)
			sum += r.CPU[k]
		}
		r.StartNs, r.EndNs = t0, t0+sum
		t0 = r.EndNs
		w.Add(&r)
	}
	return w.Summarize(0)
}

// network40 is a 40 ms step of the network's, data ready.
func network40(extra map[string]float64) func(int) map[string]float64 {
	return func(int) map[string]float64 {
		m := map[string]float64{stage.DataWait: 0.5, stage.Forward: 20, stage.Backward: 15, stage.Optim: 4.5}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
}

// TestPreprocessRule: transforms on the training thread (the 62
// ms of an 82 ms step) are preprocess-bound, with the advice to move them
// into the Dataset; a little preprocessing is not (the rule removed, the
// first case reads compute-bound).
func TestPreprocessRule(t *testing.T) {
	noWorkers := &stage.LoaderStats{Source: "torch", Workers: 0}
	for _, tc := range []struct {
		name   string
		s      stage.Summary
		loader *stage.LoaderStats
		want   Kind
		has    []string
	}{
		{"transforms in the loop", loopWindow(40, func(int) map[string]float64 {
			return map[string]float64{stage.DataWait: 1, stage.Preprocess: 62, stage.Forward: 8, stage.Backward: 9, stage.Optim: 2}
		}), nil, PreprocessBound, []string{"preprocess-bound: transforms and augmentation on the training thread take 76 % of each 82.0 ms step (62.0 ms), outside the model",
			"move them into the Dataset's __getitem__", "batched on the device"}},
		{"and no workers", loopWindow(40, func(int) map[string]float64 {
			return map[string]float64{stage.DataWait: 1, stage.Preprocess: 62, stage.Forward: 8, stage.Backward: 9, stage.Optim: 2}
		}), noWorkers, PreprocessBound, []string{"(with num_workers=2 or more)"}},
		{"a little preprocessing", loopWindow(40, network40(map[string]float64{stage.Preprocess: 3})), nil, ComputeBound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Inputs{Summary: tc.s, Loader: tc.loader})
			if v.Kind != tc.want {
				t.Fatalf("verdict %s, want %s", v, tc.want)
			}
			for _, h := range tc.has {
				if !strings.Contains(v.String(), h) {
					t.Errorf("%q lacks %q", v, h)
				}
			}
		})
	}
}

// checkpointEvery25 is step i of a network-bound loop (network40) that
// pauses 170 ms in untimed work every 25 steps: a checkpoint.
func checkpointEvery25(i int) map[string]float64 {
	m := network40(nil)(i)
	if i%25 == 24 {
		m[stage.Other] = 170
	}
	return m
}

// TestAlsoCosts: a cost of 10 % of the run or more is named beside the
// verdict that wins (a checkpoint's pause every 25 steps at 14 % under a
// compute-bound step, evaluation at 12 %), never the verdict's own stage;
// a run without such a cost has none (Judge without Also: the first cases
// fail).
func TestAlsoCosts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      stage.Summary
		kind   Kind
		has    []string
		stages []string // the stages of the costs, in order
	}{
		{"a checkpoint every 25 steps", loopWindow(200, checkpointEvery25), ComputeBound,
			[]string{"— also: untimed work (other) every 25 steps, 170 ms, 15 % of the run"}, []string{stage.Other}},
		{"evaluation at 12 %", loopWindow(200, network40(map[string]float64{stage.Eval: 5.5})), ComputeBound,
			[]string{"— also: evaluation 12 % of each step (5.5 ms)"}, []string{stage.Eval}},
		{"both, the larger first", loopWindow(200, func(i int) map[string]float64 {
			m := checkpointEvery25(i)
			m[stage.Eval] = 5.5
			return m
		}), ComputeBound, []string{"also: untimed work (other) every 25 steps", "; evaluation 11 %"}, []string{stage.Other, stage.Eval}},
		{"no cost beside the network", loopWindow(200, network40(map[string]float64{stage.Eval: 2, stage.Other: 1})), ComputeBound, nil, nil},
		{"the verdict's own stage is not repeated", loopWindow(40, func(int) map[string]float64 {
			return map[string]float64{stage.DataWait: 1, stage.Preprocess: 62, stage.Forward: 8, stage.Backward: 9, stage.Optim: 2}
		}), PreprocessBound, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Inputs{Summary: tc.s})
			if v.Kind != tc.kind {
				t.Fatalf("verdict %s, want %s", v, tc.kind)
			}
			var got []string
			for _, c := range v.Also {
				got = append(got, c.Stage)
				if c.Share < AlsoShare {
					t.Errorf("cost %+v below AlsoShare", c)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.stages, ",") {
				t.Errorf("costs of %v, want %v: %s", got, tc.stages, v)
			}
			for _, h := range tc.has {
				if !strings.Contains(v.String(), h) {
					t.Errorf("%q lacks %q", v, h)
				}
			}
		})
	}
}

// TestAlsoNamesTheSavingFunction: a checkpoint's pause beside a
// compute-bound step whose samples hold no library write on their hot
// path (CI's checkpoint plant on a loaded disk: 70 % of the pauses in the
// rename at save_checkpoint's line 39, torch `_save` 28 %) names the
// user's function and line; with no samples, the cost names only the
// stage.
func TestAlsoNamesTheSavingFunction(t *testing.T) {
	code := stage.ProfileOf(samplesOf(1e18,
		testRow{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{fr("save_checkpoint", "ckpt.py", 39)}), 70},
		testRow{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{fr("save_checkpoint", "ckpt.py", 38),
			lib("torch", "save", "torch/serialization.py", 423), lib("torch", "_save", "torch/serialization.py", 650)}), 28},
		testRow{stage.RoleTrain, stage.Other, -1, mainLoop, 2}))
	s := loopWindow(200, checkpointEvery25)
	v := Judge(Inputs{Summary: s, Code: code})
	want := "also: untimed work (other) every 25 steps, 170 ms, 15 % of the run; 70 % of its samples in `save_checkpoint` at ckpt.py:39"
	if v.Kind != ComputeBound || !strings.Contains(v.String(), want) {
		t.Errorf("verdict %s\nwant %s, %q", v, ComputeBound, want)
	}
	if bare := Judge(Inputs{Summary: s}); strings.Contains(bare.String(), "% in `") {
		t.Errorf("without samples the cost names code: %s", bare)
	}
}

// TestAlsoNamesTheTrip: float images from the workers behind a loop whose
// untimed rest wins (CI's float_images.py: 46 % of each step outside every
// stage, data_wait 25 %): the wait beside the verdict carries the trip's
// advice, which a verdict naming the input gives as its next step; the
// uint8 control's wait carries none.
func TestAlsoNamesTheTrip(t *testing.T) {
	s := loopWindow(40, func(int) map[string]float64 {
		return map[string]float64{stage.DataWait: 4, stage.Forward: 2, stage.Backward: 1, stage.Optim: 1, stage.Other: 7.5}
	})
	for _, tc := range []struct {
		name   string
		loader *stage.LoaderStats
		want   string
	}{
		{"float32 images", tripLoader(0.6, 64, 3.7, cams(4, 4)), "workers send 24.0 MiB per batch to the main process"},
		{"uint8 images", tripLoader(0.6, 64, 2, cams(1, 0)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Inputs{Summary: s, Loader: tc.loader})
			if v.Kind != Untimed {
				t.Fatalf("verdict %s, want untimed to win", v)
			}
			var wait *Cost
			for i := range v.Also {
				if v.Also[i].Stage == stage.DataWait {
					wait = &v.Also[i]
				}
			}
			if wait == nil {
				t.Fatalf("no data_wait beside the verdict: %s", v)
			}
			if got := strings.Contains(wait.Text, "workers send"); got != (tc.want != "") || !strings.Contains(wait.Text, tc.want) {
				t.Errorf("data_wait beside the verdict %q, want the trip named: %v", wait.Text, tc.want != "")
			}
		})
	}
}
