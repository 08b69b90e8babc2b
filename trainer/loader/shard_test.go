package loader

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/trainer/dataset"
)

// shardedDataset writes the dataset sizedDataset writes, as Zarr v3 with
// 1-frame chunks in shards of shardFrames frames.
func shardedDataset(t testing.TB, shardFrames, episodes, frames int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds3")
	err := dataset.Generate(dataset.GenOptions{Out: dir, Episodes: episodes, Frames: frames, ChunkFrames: 1, Codec: "blosc-lz4",
		Seed: 3, Size: 32, Layout: dataset.Layout{Format: 3, ShardFrames: shardFrames}})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestShardedMatchesV2 checks that the loader gives the same batches from
// 1-frame chunks in v3 shards as from 1-frame v2 chunks of the same data,
// each checked against the reference reader, with and without a cache.
func TestShardedMatchesV2(t *testing.T) {
	v2 := sizedDataset(t, 1, "blosc-lz4", 3, 40)
	v3 := shardedDataset(t, 16, 3, 40) // 120 frames: the last shard is partial
	ref := newReference(t, v3)
	for _, tc := range []struct {
		workers int
		cache   int64
		sampler string
	}{{0, 0, "uniform"}, {2, 1, "uniform"}, {3, 64 << 10, "chunk"}} {
		cfg := Config{Batch: 8, Workers: tc.workers, Sampler: tc.sampler, Mix: 3, Seed: 9, CacheBytes: tc.cache}
		cfg.Dir = v2
		want := collect(t, cfg, 10)
		cfg.Dir = v3
		got := collect(t, cfg, 10)
		for k := range got {
			ref.check(t, got[k])
			if !slices.Equal(got[k].Windows, want[k].Windows) || !bytes.Equal(got[k].Images, want[k].Images) ||
				!slices.Equal(got[k].State, want[k].State) || !slices.Equal(got[k].Action, want[k].Action) {
				t.Fatalf("%+v: batch %d differs between v2 chunks and v3 shards", tc, k)
			}
		}
	}
}

// TestCorruptShardSurfaces damages one shard's index: every batch that
// needs the shard fails with an error naming the array and the shard,
// and the loader keeps going.
func TestCorruptShardSurfaces(t *testing.T) {
	dir := shardedDataset(t, 100, 3, 25) // one shard per camera
	file := filepath.Join(dir, "data", "camera1", "c", "0", "0", "0", "0")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-7] ^= 1 // inside the index, before its checksum
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Dir: dir, Batch: 4, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = l.Next(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), `array "data/camera1" shard c/0/0/0/0: index: crc32c: checksum mismatch`) {
			t.Fatalf("error %v does not name the array, shard and problem", err)
		}
	}
}
