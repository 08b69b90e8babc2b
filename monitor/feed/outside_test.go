package feed

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestReconnectKeepsTheRunsSamples: reading the same Python process again
// (a reconnect starts a new sampler) keeps what the earlier sampler read
// in the run's samples, which the end-of-run summary takes (live: a real
// CPython read from outside).
func TestReconnectKeepsTheRunsSamples(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s: %v", python, err)
	}
	cmd := exec.Command(python, "-c", "def spin():\n    while True:\n        sum(range(100))\nspin()\n")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(300 * time.Millisecond) // the interpreter up
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := New(0)
	defer f.Close()
	samples := func() int64 {
		_, s := f.RunStacks()
		if s == nil {
			return 0
		}
		n, _ := s.Samples()
		return n
	}
	if err := f.AttachProcess(ctx, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	before := samples()
	if before < 10 {
		t.Fatalf("%d samples in 1.5 s at the default rate", before)
	}
	if err := f.AttachProcess(ctx, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if after := samples(); after < before {
		t.Errorf("%d samples of the run after the reconnect, %d before: the earlier reading was lost", after, before)
	}
}
