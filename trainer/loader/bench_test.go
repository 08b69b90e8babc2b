package loader

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pipetop/pipetop/trainer/dataset"
)

// BenchmarkLoader measures batches of 64 from 128x128 4-camera datasets
// with 1-frame chunks and with zarr's default chunking (chunk-aware
// sampler). One op is one batch; samples/s is reported. The full
// comparison with zarr-python + DataLoader is bench/loader.sh.
func BenchmarkLoader(b *testing.B) {
	root := b.TempDir()
	for _, tc := range []struct {
		name    string
		chunk   int
		sampler string
	}{
		{"frames1", 1, "uniform"},
		{"default-chunking", 0, "chunk"},
	} {
		dir := filepath.Join(root, tc.name)
		if err := dataset.Generate(dataset.GenOptions{Out: dir, Episodes: 10, Frames: 200, ChunkFrames: tc.chunk, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		for _, workers := range []int{0, 2} {
			b.Run(fmt.Sprintf("%s/%s/workers=%d", tc.name, tc.sampler, workers), func(b *testing.B) {
				l, err := New(Config{Dir: dir, Batch: 64, Workers: workers, Sampler: tc.sampler, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				ctx := context.Background()
				n := 0
				for b.Loop() {
					bt, err := l.Next(ctx)
					if err != nil {
						b.Fatal(err)
					}
					n += bt.Size
					l.Release(bt)
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
				b.ReportMetric(l.Stats().ReadAmp, "read-amp")
			})
		}
	}
}
