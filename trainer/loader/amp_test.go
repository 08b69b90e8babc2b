package loader

import (
	"context"
	"math"
	"testing"

	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/episodes"
)

// TestInspectPredictsLoaderReadAmp runs the real loader over datasets with
// 1-frame, 100-frame and zarr-default camera chunks, with a cache smaller
// than the data, and checks that `pipetrain data inspect`'s model of the
// same cache and batch predicts the read amplification the loader measured
// (past its cold start) within 20 %.
func TestInspectPredictsLoaderReadAmp(t *testing.T) {
	const cache = 2 << 20 // the decoded cameras are about 7 MiB
	for _, tc := range []struct {
		name   string
		frames int // camera chunk frames; 0 is zarr's default guess
	}{{"1-frame", 1}, {"100-frame", 100}, {"zarr-default", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sizedDataset(t, tc.frames, "blosc-lz4", 6, 100)
			rep, err := dataset.InspectWith(dir, episodes.DefaultKeys, episodes.DefaultWindow, dataset.InspectOptions{CacheBytes: cache, Batch: 8})
			if err != nil {
				t.Fatal(err)
			}
			l, err := New(Config{Dir: dir, Batch: 8, Workers: 1, CacheBytes: cache, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			next := func(n int) {
				for range n {
					b, err := l.Next(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					l.Release(b)
				}
			}
			// Past the cold start, as the model is: the read amplification
			// of 240 batches after the first 40. The worker's lead over
			// the consumer at either reading is noise; a long span
			// dilutes it (over 80 batches it once moved 100-frame's
			// figure by 25 % on a loaded machine).
			next(40)
			s0 := l.Stats()
			next(240)
			s1 := l.Stats()
			got := float64(s1.BytesDecoded-s0.BytesDecoded) / float64(s1.BytesUsed-s0.BytesUsed)
			t.Logf("%s: loader measured %.2f, inspect predicts %.2f (%.2f once the data is 10x the cache)", tc.name, got, rep.ReadAmpUniform, rep.ReadAmpLarge)
			if math.Abs(rep.ReadAmpUniform-got) > 0.2*got {
				t.Errorf("inspect predicts read amplification %.2f, the loader measured %.2f (off by more than 20 %%)", rep.ReadAmpUniform, got)
			}
		})
	}
}
