package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDataCommands(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	v3, shards := filepath.Join(dir, "v3"), filepath.Join(dir, "shards")
	steps := [][]string{
		{"gen", "--out", src, "--episodes", "2", "--frames", "30", "--chunk-frames", "auto", "--codec", "zstd"},
		{"inspect", src, "--json"},
		{"inspect", src},
		{"rechunk", src, dst, "--chunk-frames", "1", "--codec", "blosc-lz4"},
		{"gen", "--out", v3, "--episodes", "2", "--frames", "30", "--format", "3", "--shard-frames", "20"},
		{"inspect", v3},
		{"rechunk", src, shards, "--chunk-frames", "1", "--shard-frames", "25"},
	}
	for _, args := range steps {
		if err := runData(args); err != nil {
			t.Fatalf("data %v: %v", args, err)
		}
	}
	for _, d := range []string{dst, v3, shards} {
		if err := runBench([]string{"loader", "--data", d, "--workers", "1", "--batch", "4", "--seconds", "0.2"}); err != nil {
			t.Fatalf("bench loader %s: %v", d, err)
		}
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--out", filepath.Join(dir, "x"), "--chunk-frames", "many"}, `--chunk-frames "many"`},
		{[]string{"inspect"}, "want one dataset directory"},
		{[]string{"rechunk", src}, "want SRC and DST"},
		{[]string{"rechunk", src, dst}, "already exists"},
		{[]string{"rechunk", src, filepath.Join(dir, "y"), "--format", "2", "--shard-frames", "10"}, "need Zarr format 3"},
		{[]string{"gen", "--out", filepath.Join(dir, "z"), "--format", "5"}, "format 5"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, tt := range bad {
		if err := runData(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("data %v: error %v, want %q", tt.args, err, tt.want)
		}
	}
	if err := runBench([]string{"loader", "--data", dst, "--sampler", "lifo", "--seconds", "0.1"}); err == nil || !strings.Contains(err.Error(), `unknown sampler "lifo"`) {
		t.Errorf("bench with a bad sampler: %v", err)
	}
}
