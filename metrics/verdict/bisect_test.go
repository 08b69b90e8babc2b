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
		}, ComputeBound, []string{"most in backward", "95 % of the network alone"}},
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
