package main

import (
	"os"
	"os/exec"
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
		{[]string{"inspect"}, "want one dataset directory or file"},
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

// TestDataImport runs inspect and import on an HDF5 file and an MP4
// directory written by h5py and ffmpeg, and checks the bad arguments.
func TestDataImport(t *testing.T) {
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("no /usr/bin/python3 with h5py")
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("no ffmpeg")
	}
	dir := t.TempDir()
	h5 := filepath.Join(dir, "robo.h5")
	script := `import h5py, numpy as np, sys
with h5py.File(sys.argv[1], 'w') as f:
    for i in range(2):
        f.create_dataset(f'data/demo_{i}/obs/cam', data=np.zeros((20, 8, 8, 3), 'u1'), chunks=(20, 8, 8, 3), compression='gzip')
        f.create_dataset(f'data/demo_{i}/obs/pos', data=np.zeros((20, 3)))
        f.create_dataset(f'data/demo_{i}/actions', data=np.ones((20, 2)))
`
	if out, err := exec.Command(py, "-c", script, h5).CombinedOutput(); err != nil {
		t.Fatalf("h5py: %v\n%s", err, out)
	}
	vids := filepath.Join(dir, "vids")
	os.Mkdir(vids, 0o755)
	for _, name := range []string{"left.mp4", "right.mp4"} {
		args := []string{"-v", "error", "-f", "lavfi", "-i", "testsrc=size=16x16:rate=10", "-frames:v", "12", "-c:v", "libx264", "-g", "4", "-pix_fmt", "yuv420p", filepath.Join(vids, name)}
		if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg: %v\n%s", err, out)
		}
	}
	store := filepath.Join(dir, "robo.zarr")
	steps := [][]string{
		{"inspect", h5},
		{"inspect", h5, "--json"},
		{"inspect", vids},
		{"inspect", filepath.Join(vids, "left.mp4"), "--json"},
		{"import", h5, store},
		{"inspect", store, "--cameras", "camera0"},
		{"import", vids, filepath.Join(dir, "vids.zarr"), "--keys", "right"},
		{"import", filepath.Join(vids, "left.mp4"), filepath.Join(dir, "left.zarr")},
	}
	for _, args := range steps {
		if err := runData(args); err != nil {
			t.Fatalf("data %v: %v", args, err)
		}
	}
	if err := runBench([]string{"loader", "--data", store, "--cameras", "camera0", "--workers", "1", "--batch", "4", "--seconds", "0.2"}); err != nil {
		t.Fatalf("bench loader on the imported store: %v", err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"import", h5}, "want SRC and DST"},
		{[]string{"import", h5, store}, "already exists"},
		{[]string{"import", filepath.Join(dir, "x.txt"), filepath.Join(dir, "y")}, "no such file"},
		{[]string{"import", vids, filepath.Join(dir, "z"), "--keys", "middle"}, "no camera middle (have: left, right)"},
	}
	for _, tt := range bad {
		if err := runData(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("data %v: error %v, want %q", tt.args, err, tt.want)
		}
	}
}
