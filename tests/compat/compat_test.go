// Package compat attaches this version's viewer and trainers to those of
// the version before agg frames, built from git: a pipetop that never
// heard of agg frames must still get steps from a new trainer, and a
// pipetop that asks for them must still read an old trainer's steps.
package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// before is the last commit before agg frames.
const before = "3a2f7c7"

// old is the tree of before, unpacked once into build/compat-BEFORE under
// the module's root with its pipetop and synthetic built into its bin/
// (kept for the next run: an unchanged commit needs no second build),
// and that bin/; the test is skipped in a clone without that commit (a
// shallow one).
func old(t *testing.T) (src, bins string) {
	t.Helper()
	root := testkit.Root(t)
	if err := exec.Command("git", "-C", root, "cat-file", "-e", before+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this clone (shallow?): %v", before, err)
	}
	dir := filepath.Join(root, "build", "compat-"+before)
	src, bins = filepath.Join(dir, "src"), filepath.Join(dir, "bin")
	done := filepath.Join(dir, "built")
	if _, err := os.Stat(done); err == nil {
		return src, bins
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	unpack(t, root, src)
	if err := testkit.BuildErr(src, bins, "./cmd/pipetop", "./examples/synthetic"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return src, bins
}

// unpack extracts the tree of before from the repository at root into dir.
func unpack(t *testing.T, root, dir string) {
	t.Helper()
	archive := exec.Command("git", "-C", root, "archive", before)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v", before, err)
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("untar %s: %v", before, err)
	}
}

// snap is the part of pipetop --json this test reads.
type snap struct {
	Summary *struct {
		Steps       int     `json:"steps"`
		StepsPerSec float64 `json:"steps_per_sec"`
	} `json:"summary"`
	Verdict *verdict.Verdict `json:"verdict"`
}

// viewer is a pipetop binary and the environment it runs with.
type viewer struct {
	name, bin string
	env       []string
}

// look runs pipetop --json as v against the trainers in sockets.
func look(v viewer, sockets string) (snap, error) {
	cmd := exec.Command(v.bin, "--json", "--no-gpu", "--interval", "3s", "--window", "5s")
	cmd.Env = append(append(os.Environ(), "PIPETOP_SOCKET_DIR="+sockets), v.env...)
	out, err := cmd.Output()
	if err != nil {
		return snap{}, fmt.Errorf("%s --json: %w\n%s", v.name, err, out)
	}
	var s snap
	if err := json.Unmarshal(out, &s); err != nil {
		return snap{}, fmt.Errorf("%s --json: %w\n%s", v.name, err, out)
	}
	if s.Summary == nil || s.Summary.Steps < 50 || s.Verdict == nil {
		return snap{}, fmt.Errorf("%s saw no steps: %s", v.name, out)
	}
	return s, nil
}

// pyPublisher is a loop of 200 steps/s that waits 30 ms for data every
// 10th step, on the pipetop_publish package found on pythonPath.
const pyPublisher = `
import sys, time
from pipetop_publish import Publisher
with Publisher(name="compat") as pub:
    step = 0
    while True:
        with pub.stage("data_wait"):
            time.sleep(0.03 if step % 10 == 0 else 0.0005)
        with pub.stage("forward"):
            time.sleep(0.004)
        pub.step(samples=8)
        step += 1
`

func startPython(t *testing.T, sockets, pythonPath string) {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", "-c", pyPublisher)
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+sockets, "PYTHONPATH="+pythonPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testkit.Stop(cmd) })
	awaitSocket(t, sockets)
}

func awaitSocket(t *testing.T, dir string) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.sock")); len(m) > 0 {
			time.Sleep(time.Second) // some steps
			return
		}
	}
	t.Fatalf("no trainer socket in %s", dir)
}

// lookAll runs every viewer at once on the trainer in sockets; each must
// see input stalls every 10th step.
func lookAll(t *testing.T, sockets string, vs []viewer) {
	t.Helper()
	snaps, errs := make([]snap, len(vs)), make([]error, len(vs))
	done := make(chan struct{})
	for i, v := range vs {
		go func() {
			snaps[i], errs[i] = look(v, sockets)
			done <- struct{}{}
		}()
	}
	for range vs {
		<-done
	}
	for i, v := range vs {
		if errs[i] != nil {
			t.Error(errs[i])
			continue
		}
		got := snaps[i].Verdict
		if got.Kind != verdict.InputStalls || got.Stage != stage.DataWait || !strings.Contains(got.Headline, "every 10th step") {
			t.Errorf("%s: %s, want input stalls every 10th step", v.name, got)
		}
		t.Logf("%s: %d steps, %.0f steps/s: %s", v.name, snaps[i].Summary.Steps, snaps[i].Summary.StepsPerSec, got)
	}
}

func TestOldAndNewSideBySide(t *testing.T) {
	src, oldBins := old(t)
	bins := testkit.BinDir(t)
	newView := filepath.Join(bins, "pipetop")
	viewers := []viewer{
		{name: "old pipetop", bin: filepath.Join(oldBins, "pipetop")},
		{name: "new pipetop, steps", bin: newView, env: []string{"PIPETOP_AGGREGATES=0"}},
		{name: "new pipetop, agg frames", bin: newView, env: []string{"PIPETOP_AGGREGATES=1"}},
	}
	newPy, oldPy := filepath.Join(testkit.Root(t), "clients", "python"), filepath.Join(src, "clients", "python")
	goTrainer := func(bin string) func(*testing.T, string) {
		return func(t *testing.T, sockets string) {
			testkit.Start(t, sockets, bin, "-name", "compat", "-every", "10", "-spike", "40ms", "-stages", "data_wait=0.5ms,forward=4ms", "-quiet")
			awaitSocket(t, sockets)
		}
	}
	for _, tr := range []struct {
		name  string
		start func(t *testing.T, sockets string)
	}{
		{"new Go trainer", goTrainer(filepath.Join(bins, "synthetic"))},
		{"old Go trainer", goTrainer(filepath.Join(oldBins, "synthetic"))},
		{"new Python trainer", func(t *testing.T, s string) { startPython(t, s, newPy) }},
		{"old Python trainer", func(t *testing.T, s string) { startPython(t, s, oldPy) }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			sockets := testkit.SocketDir(t)
			tr.start(t, sockets)
			lookAll(t, sockets, viewers)
		})
	}
}
