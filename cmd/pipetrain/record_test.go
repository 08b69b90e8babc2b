package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/monitor/summary"
	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/torch"
)

// TestRecordInProcess trains the tiny preset with --record and reads the
// recording back: every step is in it, with the trainer's name.
func TestRecordInProcess(t *testing.T) {
	shim, err := torch.FindShim()
	if err != nil {
		t.Fatalf("%v (make test builds it)", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "pipetrain")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "d.zarr")
	if err := dataset.Generate(dataset.GenOptions{Out: data, Episodes: 2, Frames: 40, ChunkFrames: 1, Size: 32}); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "run.pipetop")
	cmd := exec.Command(bin, "train", "--data", data, "--preset", "tiny", "--batch", "4", "--threads", "1", "--workers", "1",
		"--shim", shim, "--max-steps", "30", "--name", "rec-test", "--record", rec)
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+filepath.Join(dir, "sockets"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "recorded to "+rec) {
		t.Fatalf("train --record: %v\n%s", err, out)
	}
	r, err := summary.FromFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "rec-test" || r.Whole.Steps != 30 || r.Damage != "" {
		t.Fatalf("recording holds %s (damage %q), want 30 steps of rec-test", r.Describe(), r.Damage)
	}
}
