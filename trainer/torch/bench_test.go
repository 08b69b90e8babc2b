package torch

import (
	"testing"
	"time"
)

// BenchmarkSmallTrainStep measures one full CPU train step of the small
// (demo) preset at batch 8: upload, forward, backward, optim step, sync.
func BenchmarkSmallTrainStep(b *testing.B) {
	lib := openLib(b)
	p := newPolicy(b, lib, Config{Preset: "small", Device: "cpu", Threads: 2, Seed: 1})
	const batch = 8
	data := syntheticBatch(p.Info().Config, batch, 1)
	step := func() {
		if err := p.Upload(data.images, data.state, data.action, batch); err != nil {
			b.Fatal(err)
		}
		if err := p.Forward(); err != nil {
			b.Fatal(err)
		}
		if err := p.Backward(); err != nil {
			b.Fatal(err)
		}
		if err := p.OptimStep(); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	step() // warm up allocator and kernels
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "steps/s")
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "samples/s")
}

// BenchmarkStepBookkeeping measures the per-step binding overhead the loop
// pays besides the stages: BeginStep and a PollGPUTimings call.
func BenchmarkStepBookkeeping(b *testing.B) {
	p := newPolicy(b, openLib(b), tinyConfig(1))
	var buf [16]StageTiming
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := p.BeginStep(int64(i)); err != nil {
			b.Fatal(err)
		}
		p.PollGPUTimings(buf[:])
	}
}
