package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDataCommands(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	steps := [][]string{
		{"gen", "--out", src, "--episodes", "2", "--frames", "30", "--chunk-frames", "auto", "--codec", "zstd"},
		{"inspect", src, "--json"},
		{"inspect", src},
		{"rechunk", src, dst, "--chunk-frames", "1", "--codec", "blosc-lz4"},
	}
	for _, args := range steps {
		if err := runData(args); err != nil {
			t.Fatalf("data %v: %v", args, err)
		}
	}
	if err := runBench([]string{"loader", "--data", dst, "--workers", "1", "--batch", "4", "--seconds", "0.2"}); err != nil {
		t.Fatalf("bench loader: %v", err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--out", filepath.Join(dir, "x"), "--chunk-frames", "many"}, `--chunk-frames "many"`},
		{[]string{"inspect"}, "want one dataset directory"},
		{[]string{"rechunk", src}, "want SRC and DST"},
		{[]string{"rechunk", src, dst}, "already exists"},
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
