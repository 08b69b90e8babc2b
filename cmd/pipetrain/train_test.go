package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/trainer"
	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/torch"
)

// TestSIGINTWritesCheckpoint runs the real binary, interrupts it mid-run
// and checks that it exits cleanly with a checkpoint that --resume takes.
func TestSIGINTWritesCheckpoint(t *testing.T) {
	shim, dir, bin, data := binaryAndData(t)
	ckpt := filepath.Join(dir, "ckpt")
	args := []string{"train", "--data", data, "--preset", "tiny", "--batch", "4", "--threads", "1", "--workers", "1",
		"--shim", shim, "--ckpt", ckpt, "--log-every", "1", "--name", "sigint-test"}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+filepath.Join(dir, "sockets"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var log []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.HasPrefix(sc.Text(), "step      5") {
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pipetrain exited with %v after SIGINT:\n%s", err, strings.Join(log, "\n"))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pipetrain did not stop after SIGINT")
	}
	joined := strings.Join(log, "\n")
	if !strings.Contains(joined, "stopped by signal") || !strings.Contains(joined, "checkpoint: step") {
		t.Fatalf("log lacks the stop and the checkpoint:\n%s", joined)
	}
	if _, err := os.Stat(filepath.Join(ckpt, trainer.LatestCheckpoint)); err != nil {
		t.Fatal(err)
	}
	// The checkpoint resumes.
	out, err := exec.Command(bin, append(args, "--resume", "--max-steps", "10", "--no-serve")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "resumed at step") {
		t.Fatalf("resume: %v\n%s", err, out)
	}
}

// binaryAndData finds the shim, builds this binary and generates a small
// 1-frame-chunked dataset, in a temporary directory.
func binaryAndData(t *testing.T) (shim, dir, bin, data string) {
	t.Helper()
	shim, err := torch.FindShim()
	if err != nil {
		t.Fatalf("%v (make test builds it)", err)
	}
	dir = t.TempDir()
	bin = testkit.Bin(t, "pipetrain")
	data = filepath.Join(dir, "d.zarr")
	if err := dataset.Generate(dataset.GenOptions{Out: data, Episodes: 2, Frames: 40, ChunkFrames: 1, Size: 32}); err != nil {
		t.Fatal(err)
	}
	return shim, dir, bin, data
}
