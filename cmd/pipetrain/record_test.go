package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/summary"
)

// TestRecordInProcess trains the tiny preset with --record and reads the
// recording back: every step is in it, with the trainer's name.
func TestRecordInProcess(t *testing.T) {
	shim, dir, bin, data := binaryAndData(t)
	rec := filepath.Join(dir, "run.pipetop")
	cmd := exec.Command(bin, "train", "--data", data, "--preset", "tiny", "--batch", "4", "--threads", "1", "--workers", "1",
		"--shim", shim, "--max-steps", "300", "--name", "rec-test", "--record", rec)
	cmd.Env = append(os.Environ(), "PIPETOP_SOCKET_DIR="+filepath.Join(dir, "sockets"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "recorded to "+rec) {
		t.Fatalf("train --record: %v\n%s", err, out)
	}
	r, err := summary.FromFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "rec-test" || r.Whole.Steps != 300 || r.Damage != "" {
		t.Fatalf("recording holds %s (damage %q), want 300 steps of rec-test", r.Describe(), r.Damage)
	}
	// The threads part: the training thread named by the hello's tid.
	_, entries, err := recording.ReadAll(rec)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]bool{}
	for _, e := range entries {
		var th struct {
			Threads []struct{ Role string } `json:"threads"`
		}
		if raw, ok := e.Host["threads"]; ok && json.Unmarshal(raw, &th) == nil {
			for _, x := range th.Threads {
				roles[x.Role] = true
			}
		}
	}
	if !roles["training"] {
		t.Errorf("the recording's threads have roles %v, want a training thread", roles)
	}
	// The summary reads them back: the run's CPU use by role (300 steps
	// last a few refreshes: rates need two readings).
	var text strings.Builder
	if err := summary.WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if r.CPU == nil || r.CPU.Refreshes == 0 || r.CPU.RoleCores["training"] <= 0 ||
		!strings.Contains(text.String(), "CPU: the run's threads wanted") || !strings.Contains(text.String(), "cores used by role: ") {
		t.Errorf("summary CPU = %+v, text:\n%s", r.CPU, text.String())
	}
}
