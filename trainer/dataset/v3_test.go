package dataset

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/zarr"
)

// TestRechunkToShards rechunks a v2 dataset into v3 shards and back, and
// checks the data, the formats, the shard layout and the files per array.
func TestRechunkToShards(t *testing.T) {
	base := t.TempDir()
	src, sharded, back := filepath.Join(base, "src"), filepath.Join(base, "sharded"), filepath.Join(base, "back")
	if err := Generate(GenOptions{Out: src, Episodes: 3, Frames: 50, ChunkFrames: 0, Seed: 3, Size: 32}); err != nil {
		t.Fatal(err)
	}
	if err := Rechunk(src, sharded, RechunkOptions{ChunkFrames: 1, Codec: "zstd", SlabBytes: 50000, Layout: Layout{ShardFrames: 40}}); err != nil {
		t.Fatal(err)
	}
	if err := Rechunk(sharded, back, RechunkOptions{ChunkFrames: 7, Layout: Layout{Format: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"data/camera0", "data/camera3", "data/state", "data/action", "meta/episode_ends"} {
		want := readAll(t, src, a)
		if !bytes.Equal(want, readAll(t, sharded, a)) || !bytes.Equal(want, readAll(t, back, a)) {
			t.Errorf("%s differs after rechunk", a)
		}
	}
	tests := []struct {
		dir    string
		format int
		shards []int
		files  int64
	}{
		{sharded, 3, []int{40, 32, 32, 3}, 4}, // 150 frames in shards of 40
		{back, 2, nil, 22},                    // 150 frames in chunks of 7
	}
	for _, tt := range tests {
		rep, err := Inspect(tt.dir, episodes.DefaultKeys, episodes.DefaultWindow)
		if err != nil {
			t.Fatal(err)
		}
		cam := rep.Arrays[1]
		if rep.Format != tt.format || cam.Path != "data/camera0" || cam.Files != tt.files || !slices.Equal(cam.ShardShape, tt.shards) {
			t.Errorf("%s: format %d, %s shards %v files %d; want %d, %v, %d", tt.dir, rep.Format, cam.Path, cam.ShardShape, cam.Files, tt.format, tt.shards, tt.files)
		}
		var txt bytes.Buffer
		if err := rep.WriteText(&txt); err != nil || !strings.Contains(txt.String(), "FILES") {
			t.Errorf("text report: %v\n%s", err, txt.String())
		}
	}
	for _, dir := range []string{sharded, back} {
		s, err := zarr.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if attrs, err := s.Attrs(""); err != nil || attrs["generator"] != "pipetrain data gen" {
			t.Errorf("%s: root attributes %v, %v", dir, attrs, err)
		}
	}
	bad := []struct {
		o    RechunkOptions
		want string
	}{
		{RechunkOptions{ChunkFrames: 1, Layout: Layout{Format: 2, ShardFrames: 10}}, "need Zarr format 3"},
		{RechunkOptions{ChunkFrames: 3, Layout: Layout{ShardFrames: 10}}, "multiple of the chunk frames 3"},
		{RechunkOptions{ChunkFrames: 1, Codec: "lz4", Layout: Layout{Format: 3}}, "has no Zarr v3 form"},
		{RechunkOptions{ChunkFrames: 1, Layout: Layout{Format: 4}}, "format 4"},
	}
	for i, tt := range bad {
		err := Rechunk(src, filepath.Join(base, "bad", string(rune('a'+i))), tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.o, err, tt.want)
		}
	}
}

// TestInspectRecommendsShards checks the advice around ShardFileThreshold:
// 1-frame chunks of more frames than that are advised into shards, and a
// badly chunked dataset that large is told to rechunk into shards.
func TestInspectRecommendsShards(t *testing.T) {
	frames := ShardFileThreshold/2 + 1 // two episodes: past the threshold
	tests := []struct {
		chunk  int
		layout Layout
		want   string
	}{
		{1, Layout{}, "Shard them, keeping 1-frame reads: pipetrain data rechunk"},
		{0, Layout{}, "--format 3 --chunk-frames 1 --shard-frames 1000"},
		{1, Layout{Format: 3, ShardFrames: 2000}, "nothing to do"},
	}
	for _, tt := range tests {
		dir := filepath.Join(t.TempDir(), "ds")
		if err := Generate(GenOptions{Out: dir, Episodes: 2, Frames: frames, ChunkFrames: tt.chunk, Codec: "none", Size: 24, Cameras: 1, Layout: tt.layout}); err != nil {
			t.Fatal(err)
		}
		keys := episodes.Keys{Cameras: []string{"camera0"}, LowDim: []string{"state"}, Action: "action"}
		rep, err := InspectWith(dir, keys, episodes.DefaultWindow, InspectOptions{CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rep.Recommendation, tt.want) {
			t.Errorf("chunk %d %+v: recommendation %q, want %q", tt.chunk, tt.layout, rep.Recommendation, tt.want)
		}
	}
}
