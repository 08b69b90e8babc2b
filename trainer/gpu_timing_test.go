package trainer

import (
	"context"
	"slices"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/trainer/loader"
)

// gpuModel is a FAKE model that reports a GPU time for forward and
// backward of every step, one step late, the way CUDA events come back.
type gpuModel struct {
	nopModel
	step    int64
	pending []GPUTiming
}

func (m *gpuModel) BeginStep(step int64) error {
	m.step = step
	m.pending = append(m.pending,
		GPUTiming{Step: step, Stage: slices.Index(stage.Canonical, stage.Forward), Ns: 1000 + step},
		GPUTiming{Step: step, Stage: slices.Index(stage.Canonical, stage.Backward), Ns: 2000 + step})
	return nil
}

func (m *gpuModel) PollGPU(dst []GPUTiming) int {
	var ready []GPUTiming
	for _, t := range m.pending {
		if t.Step < m.step {
			ready = append(ready, t)
		}
	}
	n := copy(dst, ready)
	m.pending = slices.DeleteFunc(m.pending, func(t GPUTiming) bool { return t.Step < m.step })
	return n
}

// recorder is a Publisher that keeps every record.
type recorder struct{ recs []stage.Record }

func (r *recorder) Publish(rec *stage.Record)       { r.recs = append(r.recs, *rec) }
func (r *recorder) PublishLoader(stage.LoaderStats) {}
func (r *recorder) PublishEvent(string, string)     {}

// TestGPUTimingsLandOnTheirStage: a timing's stage index is the record's
// index, from the binding to the published record.
func TestGPUTimingsLandOnTheirStage(t *testing.T) {
	src := &fixedSource{b: loader.SyntheticBatch(loader.Shape{NObs: 1, Cams: 1, H: 2, W: 2, Horizon: 1, StateDim: 1, ActionDim: 1}, 1, 1)}
	pub := &recorder{}
	lc := LoopConfig{MaxSteps: 20, LogEvery: 1 << 30, Stages: AllStages, Model: &gpuModel{}, Publisher: pub}
	if _, err := Run(context.Background(), lc, src); err != nil {
		t.Fatal(err)
	}
	fwd, bwd := slices.Index(stage.Canonical, stage.Forward), slices.Index(stage.Canonical, stage.Backward)
	got := 0
	for _, r := range pub.recs {
		if !r.HasGPU() {
			continue
		}
		got++
		if r.GPU[fwd] != 1000+r.Step || r.GPU[bwd] != 2000+r.Step || r.GPUBusyNs() != 3000+2*r.Step {
			t.Fatalf("step %d: gpu %v", r.Step, r.GPU[:r.NumStages])
		}
	}
	if got < 15 {
		t.Fatalf("%d of %d records carry GPU times", got, len(pub.recs))
	}
}
