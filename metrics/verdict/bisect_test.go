package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

func phase(name string, batch int, samplesPerSec float64, s stage.Summary, l *stage.LoaderStats) PhaseResult {
	return PhaseResult{Name: name, Batch: batch, SamplesPerSec: samplesPerSec, StepsPerSec: samplesPerSec / float64(batch), Summary: s, Loader: l}
}

func TestDiagnoseBisect(t *testing.T) {
	cpuBound := plantedWith(50, map[string]float64{stage.DataWait: 1, stage.Forward: 40, stage.Backward: 50, stage.Optim: 9}, 0)
	waiting := plantedWith(50, map[string]float64{stage.DataWait: 90, stage.Forward: 5, stage.Backward: 5}, 0)
	uploading := plantedWith(50, map[string]float64{stage.H2D: 60, stage.Forward: 20, stage.Backward: 20}, 0)
	slowChunks := &stage.LoaderStats{Workers: 2, ReadAmp: 1250, WorkerBusy: 1}
	for _, tc := range []struct {
		name     string
		phases   []PhaseResult
		want     Kind
		contains []string
	}{
		{"default chunking: input-bound with rechunk advice", []PhaseResult{
			phase(PhaseTrainFixed, 64, 2900, cpuBound, nil),
			phase(PhaseLoader, 64, 7, stage.Summary{}, slowChunks),
			phase(PhaseSynthetic, 64, 2800, cpuBound, nil),
			phase(PhaseFull, 64, 7, waiting, slowChunks),
		}, InputBound, []string{"loader delivers 7.00 samples/s, the network can take 2900", "rechunk", "1250x"}},
		{"rechunked: network-bound, names the stage", []PhaseResult{
			phase(PhaseTrainFixed, 64, 100, cpuBound, nil),
			phase(PhaseLoader, 64, 5000, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 1.1}),
			phase(PhaseSynthetic, 64, 98, cpuBound, nil),
			phase(PhaseFull, 64, 95, cpuBound, nil),
		}, ComputeBound, []string{"most in backward", "95 % of the network alone", "a faster device or a smaller model is what helps now"}},
		// zarr's default chunks behind a 64 MiB cache: the loader alone
		// is 1.6x the network, so no short loader; together they reach
		// 75 % of the network alone, so no contention either; the stages
		// of the full phase say compute-bound, but the phases measured a
		// quarter of the network's rate lost to the loader.
		{"default chunks, a 64 MiB cache: the loader costs a quarter", []PhaseResult{
			phase(PhaseTrainFixed, 64, 100, cpuBound, nil),
			phase(PhaseLoader, 64, 160, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 6, WorkerBusy: 0.6, Dataset: "/data/pusht.zarr"}),
			phase(PhaseSynthetic, 64, 98, cpuBound, nil),
			phase(PhaseFull, 64, 75, cpuBound, nil),
		}, InputBound, []string{"the network alone takes 100 samples/s on a fixed batch, the full pipeline reaches 75.0 (75 %)", "decoding 6x", "rechunk"}},
		{"1-frame chunks, the full pipeline at 75 %: not the model, not the chunks", []PhaseResult{
			phase(PhaseTrainFixed, 64, 100, cpuBound, nil),
			phase(PhaseLoader, 64, 160, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 1, WorkerBusy: 0.6}),
			phase(PhaseSynthetic, 64, 98, cpuBound, nil),
			phase(PhaseFull, 64, 75, cpuBound, nil),
		}, ComputeBound, []string{"runs at 75 % of the network alone", "would not recover"}},
		{"no workers: inline decoding", []PhaseResult{
			phase(PhaseTrainFixed, 8, 400, cpuBound, nil),
			phase(PhaseLoader, 8, 100, stage.Summary{}, &stage.LoaderStats{Workers: 0, ReadAmp: 1}),
			phase(PhaseFull, 8, 80, waiting, nil),
		}, InputBound, []string{"--workers 2"}},
		{"contention", []PhaseResult{
			phase(PhaseTrainFixed, 8, 400, cpuBound, nil),
			phase(PhaseLoader, 8, 500, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 1}),
			phase(PhaseFull, 8, 150, cpuBound, nil),
		}, Balanced, []string{"contention", "--threads"}},
		{"contention over amplified chunks: rechunk first", []PhaseResult{
			phase(PhaseTrainFixed, 8, 116, cpuBound, nil),
			phase(PhaseLoader, 8, 275, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 18.3, WorkerBusy: 1, Dataset: "/data/d.zarr"}),
			phase(PhaseFull, 8, 59.6, cpuBound, nil),
		}, Balanced, []string{"contention", "18.3x", "busy 100 %", "first cut the loader's CPU: run `pipetrain data rechunk /data/d.zarr /data/d-rechunked.zarr --chunk-frames 1`", "then"}},
		{"upload-bound", []PhaseResult{
			phase(PhaseTrainFixed, 8, 400, cpuBound, nil),
			phase(PhaseLoader, 8, 5000, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 1}),
			phase(PhaseSynthetic, 8, 100, uploading, nil),
			phase(PhaseFull, 8, 100, uploading, nil),
		}, StageBound, []string{"upload-bound"}},
		{"slower synthetic without upload time is noise, not upload-bound", []PhaseResult{
			phase(PhaseTrainFixed, 8, 400, cpuBound, nil),
			phase(PhaseLoader, 8, 5000, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 1}),
			phase(PhaseSynthetic, 8, 200, cpuBound, nil),
			phase(PhaseFull, 8, 390, cpuBound, nil),
		}, ComputeBound, nil},
		{"batch sweep", []PhaseResult{
			phase(PhaseTrainFixed, 2, 20, cpuBound, nil),
			phase(PhaseLoader, 2, 5000, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 1}),
			phase(PhaseFull, 2, 20, cpuBound, nil),
			phase(PhaseTrainFixed, 64, 480, cpuBound, nil),
			phase(PhaseFull, 64, 480, cpuBound, nil),
		}, ComputeBound, []string{"batch 64 gives 24.0x"}},
		{"incomplete", []PhaseResult{phase(PhaseFull, 8, 1, cpuBound, nil)}, WarmingUp, []string{"incomplete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := DiagnoseBisect(tc.phases)
			if v.Kind != tc.want {
				t.Fatalf("got %s (%s), want %s", v.Kind, v, tc.want)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
		})
	}
}

// cachedPhase is a pipetop bisect phase as measured (status ok), with its
// own verdict when v is set.
func cachedPhase(name string, samplesPerSec float64, s stage.Summary, l *stage.LoaderStats, v *Verdict) PhaseResult {
	p := phase(name, 8, samplesPerSec, s, l)
	p.Status, p.Steps, p.Verdict = PhaseOK, 100, v
	return p
}

// pipetop bisect's rules: each planted comparison gets its kind, and the
// figures and advice that explain it; the pipetrain cases above keep
// their verdicts.
func TestDiagnoseCachedBisect(t *testing.T) {
	cpuBound := plantedWith(50, map[string]float64{stage.DataWait: 1, stage.Forward: 70, stage.Backward: 20, stage.Optim: 9}, 0)
	waiting := plantedWith(50, map[string]float64{stage.DataWait: 90, stage.Forward: 5, stage.Backward: 5}, 0)
	zarrLoader := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.98, ReadAmp: 64,
		Zarr: []stage.ZarrArray{{Store: "/data/x.zarr", Path: "img", Chunks: []int{64, 3, 32, 32}, Shape: []int{2000, 3, 32, 32}, DType: "uint8", ItemSize: 1, ZarrFormat: 2, ReadAmp: 64, BytesDecoded: 64 << 20, BytesReturned: 1 << 20, Calls: 1000}}}
	thread := &Verdict{Kind: TrainingThreadBound, Headline: "training-thread-bound: the training thread is on a CPU 97 % of the time", Next: "fewer, larger ops"}
	compute := &Verdict{Kind: ComputeBound, Stage: stage.Forward, Headline: "compute-bound: the network takes 96 % of each step, most in forward", Next: "a faster device or a smaller model"}
	w := 1.6
	for _, tc := range []struct {
		name     string
		phases   []PhaseResult
		want     Kind
		contains []string
	}{
		{"input-bound: the loader alone is far below the network on cached batches", []PhaseResult{
			cachedPhase(PhaseLoader, 45, waiting, zarrLoader, nil),
			cachedPhase(PhaseCached, 310, cpuBound, nil, compute),
			cachedPhase(PhaseForward, 600, cpuBound, nil, compute),
			cachedPhase(PhaseFull, 43, waiting, zarrLoader, nil),
		}, InputBound, []string{"loader alone delivers 45.0 samples/s", "310 on cached batches", "together 43.0", "7.2x faster", "x.zarr"}},
		{"compute-bound: cached is no faster than the full run", []PhaseResult{
			cachedPhase(PhaseLoader, 900, waiting, &stage.LoaderStats{Source: "torch", Workers: 2, ReadAmp: 1}, nil),
			cachedPhase(PhaseCached, 105, cpuBound, nil, compute),
			cachedPhase(PhaseForward, 140, cpuBound, nil, compute),
			cachedPhase(PhaseFull, 100, cpuBound, nil, compute),
		}, ComputeBound, []string{"only 1.05x the full run", "input is not the problem", "most in forward", "forward alone runs 140", "25 %"}},
		{"contention: together below both alone, with the threads that waited", []PhaseResult{
			cachedPhase(PhaseLoader, 200, waiting, &stage.LoaderStats{Source: "torch", Workers: 2, ReadAmp: 1}, nil),
			cachedPhase(PhaseCached, 220, cpuBound, nil, compute),
			func() PhaseResult {
				p := cachedPhase(PhaseFull, 80, cpuBound, nil, compute)
				p.Waiting = &w
				p.Pools = []PoolLoad{{Role: "worker", Threads: 2, CPU: 1.1, Wait: 0.9}, {Role: "intra-op", Threads: 2, CPU: 0.8, Wait: 0.7}}
				return p
			}(),
		}, Balanced, []string{"contention", "together they reach 80.0", "1.6 threads waited", "2 worker on 1.1 cores, 0.9 waiting", "num_workers"}},
		{"contention over amplified chunks: rechunk first", []PhaseResult{
			cachedPhase(PhaseLoader, 200, waiting, zarrLoader, nil),
			cachedPhase(PhaseCached, 220, cpuBound, nil, compute),
			cachedPhase(PhaseFull, 80, cpuBound, nil, compute),
		}, Balanced, []string{"contention", "64.0x the bytes", "first cut the loader's CPU", "x.zarr"}},
		{"the seed case: the step split between the input and the network's own limit", []PhaseResult{
			cachedPhase(PhaseLoader, 300, waiting, &stage.LoaderStats{Source: "torch", Workers: 0, ReadAmp: 1}, nil),
			cachedPhase(PhaseCached, 150, cpuBound, nil, thread),
			cachedPhase(PhaseForward, 200, cpuBound, nil, thread),
			cachedPhase(PhaseFull, 100, cpuBound, nil, thread),
		}, InputBound, []string{"input costs 33 % of each step", "1.50x", "training-thread-bound on cached batches", "then, for the network: fewer, larger ops"}},
		{"no DataLoader: the full run's own verdict, and why", []PhaseResult{
			{Name: PhaseLoader, Status: PhaseSkipped, Notes: []string{"the script has no torch DataLoader"}},
			{Name: PhaseCached, Status: PhaseSkipped, Notes: []string{"the script has no torch DataLoader"}},
			cachedPhase(PhaseForward, 200, cpuBound, nil, compute),
			cachedPhase(PhaseFull, 100, cpuBound, nil, compute),
		}, ComputeBound, []string{"no cached phase: the script has no torch DataLoader", "forward alone runs 200 samples/s, 2.0x"}},
		{"a failed phase is not compared", []PhaseResult{
			cachedPhase(PhaseLoader, 900, waiting, nil, nil),
			cachedPhase(PhaseCached, 105, cpuBound, nil, compute),
			{Name: PhaseForward, Status: PhaseFailed, SamplesPerSec: 5000},
			cachedPhase(PhaseFull, 100, cpuBound, nil, compute),
		}, ComputeBound, []string{"only 1.05x"}},
		{"no full phase", []PhaseResult{cachedPhase(PhaseCached, 105, cpuBound, nil, compute)}, WarmingUp, []string{"full phase was not measured"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := DiagnoseBisect(tc.phases)
			if v.Kind != tc.want {
				t.Fatalf("got %s (%s), want %s", v.Kind, v, tc.want)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			if strings.Contains(v.String(), "--workers") || strings.Contains(v.String(), "--threads") {
				t.Errorf("a script's verdict gives pipetrain's advice: %q", v)
			}
		})
	}
}

// A pipetrain bisect whose synthetic loop is as slow as the full run is
// held back by the loop, not by the loader and network fighting.
func TestBisectSlowLoopIsNotContention(t *testing.T) {
	cpuBound := plantedWith(50, map[string]float64{stage.DataWait: 1, stage.Forward: 40, stage.Backward: 50, stage.Optim: 9}, 0)
	v := DiagnoseBisect([]PhaseResult{
		phase(PhaseTrainFixed, 8, 400, cpuBound, nil),
		phase(PhaseLoader, 8, 500, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 1}),
		phase(PhaseSynthetic, 8, 160, cpuBound, nil),
		phase(PhaseFull, 8, 150, cpuBound, nil),
	})
	if strings.Contains(v.Headline, "contention") {
		t.Errorf("full as fast as synthetic called contention: %s", v)
	}
}

// A loader needed for a sliver of what it delivers alone sits idle: a
// full phase slowed by other load on the box is not contention, and the
// stage that dominates is named (CI: a planted backward sleep read as
// contention while other tests ran).
func TestBisectIdleLoaderIsNotContention(t *testing.T) {
	slowBackward := plantedWith(50, map[string]float64{stage.DataWait: 0, stage.Forward: 47, stage.Backward: 52, stage.Optim: 1}, 0)
	v := DiagnoseBisect([]PhaseResult{
		phase(PhaseTrainFixed, 8, 11.9, slowBackward, nil),
		phase(PhaseLoader, 8, 3216, stage.Summary{}, &stage.LoaderStats{Workers: 2, ReadAmp: 0.9, WorkerBusy: 0.98}),
		phase(PhaseSynthetic, 8, 12.1, slowBackward, nil),
		phase(PhaseFull, 8, 6.14, slowBackward, nil),
	})
	if strings.Contains(v.Headline, "contention") || v.Stage != stage.Backward {
		t.Fatalf("idle loader blamed: %s (stage %q)", v, v.Stage)
	}
	if !strings.Contains(v.Headline, "loader did not cause the difference") {
		t.Errorf("the slow full phase is not explained: %s", v)
	}
	compute := &Verdict{Kind: ComputeBound, Stage: stage.Backward, Headline: "compute-bound: most in backward", Next: "a faster device"}
	v = DiagnoseBisect([]PhaseResult{
		cachedPhase(PhaseLoader, 3000, stage.Summary{}, &stage.LoaderStats{Source: "torch", Workers: 2, ReadAmp: 1}, nil),
		cachedPhase(PhaseCached, 12, slowBackward, nil, compute),
		cachedPhase(PhaseFull, 6, slowBackward, nil, compute),
	})
	if strings.Contains(v.Headline, "contention") {
		t.Errorf("idle torch loader blamed: %s", v)
	}
}
