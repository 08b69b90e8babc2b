package trainer

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/loader"
	"github.com/pipetop/pipetop/trainer/torch"
)

var benchSet onceDir

// benchData generates (once) a full-size 128x128 dataset with 1-frame
// chunks, as `make demo` uses.
func benchData(b *testing.B) string {
	dir := benchSet.get(b, func(dir string) error {
		return dataset.Generate(dataset.GenOptions{Out: filepath.Join(dir, "demo.zarr"), Episodes: 8, Frames: 200, ChunkFrames: 1, Seed: 1})
	})
	return filepath.Join(dir, "demo.zarr")
}

// BenchmarkSmallPreset trains the small preset at batch 8 on 2 cores (one
// libtorch thread, one loader worker) fed by the real loader, and on a
// fixed in-memory batch. The difference in samples/s is the input's cost.
func BenchmarkSmallPreset(b *testing.B) {
	p, err := torch.FindShim()
	if err != nil {
		b.Fatal(err)
	}
	cfg := TrainConfig{Data: benchData(b), Shim: p, Batch: 8, Workers: 1, Seed: 1, NoServe: true,
		Model: torch.Config{Preset: "small", Threads: 1, Device: "cpu"}}
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fixed := loader.SyntheticBatch(s.Loader.Shape(), cfg.Batch, 1)
	for _, tc := range []struct {
		name string
		src  Source
	}{{"real-loader", s.Loader}, {"fixed-batch", &fixedSource{b: fixed}}} {
		b.Run(tc.name, func(b *testing.B) {
			lc := LoopConfig{MaxSteps: 3, LogEvery: 10, Stages: AllStages, Model: PolicyModel{s.Policy}}
			if _, err := Run(context.Background(), lc, tc.src); err != nil { // warm-up
				b.Fatal(err)
			}
			lc.MaxSteps = int64(b.N)
			b.ResetTimer()
			res, err := Run(context.Background(), lc, tc.src)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cfg.Batch*b.N)/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(100*res.Summary.Stage("data_wait").Share, "%data_wait")
		})
	}
}

// nopModel is a model whose stages do nothing: what is left is the loop's
// own cost per step.
type nopModel struct{}

func (nopModel) BeginStep(int64) error       { return nil }
func (nopModel) Upload(*loader.Batch) error  { return nil }
func (nopModel) Forward() error              { return nil }
func (nopModel) Backward() error             { return nil }
func (nopModel) OptimStep() error            { return nil }
func (nopModel) Sync() (float32, error)      { return 1, nil }
func (nopModel) PollGPU(dst []GPUTiming) int { return 0 }

// BenchmarkLoopOverhead is the loop's own cost per step (stage spans,
// record, window, publishing bookkeeping) around a model that does nothing.
func BenchmarkLoopOverhead(b *testing.B) {
	src := &fixedSource{b: loader.SyntheticBatch(loader.Shape{NObs: 1, Cams: 1, H: 2, W: 2, Horizon: 1, StateDim: 1, ActionDim: 1}, 1, 1)}
	b.ReportAllocs()
	lc := LoopConfig{MaxSteps: int64(b.N), LogEvery: 1 << 30, Stages: AllStages, Model: nopModel{}}
	if _, err := Run(context.Background(), lc, src); err != nil {
		b.Fatal(err)
	}
}

// TestLoopStepAllocatesNothing: beyond its setup, the loop allocates
// nothing per step (the model here does nothing, so only the loop counts).
func TestLoopStepAllocatesNothing(t *testing.T) {
	src := &fixedSource{b: loader.SyntheticBatch(loader.Shape{NObs: 1, Cams: 1, H: 2, W: 2, Horizon: 1, StateDim: 1, ActionDim: 1}, 1, 1)}
	run := func(steps int64) float64 {
		return testing.AllocsPerRun(5, func() {
			lc := LoopConfig{MaxSteps: steps, LogEvery: 1 << 30, Stages: AllStages, Model: nopModel{}}
			if _, err := Run(context.Background(), lc, src); err != nil {
				t.Fatal(err)
			}
		})
	}
	// A per-step allocation would add 10,000; allow a few from the runtime.
	short, long := run(100), run(10100)
	if long > short+5 {
		t.Fatalf("%v allocations for 100 steps, %v for 10,100: the loop allocates per step", short, long)
	}
}
