package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/summary"
)

// recordSynthetic records 3 s of a real synthetic publisher with the
// given planted data_wait through pipetop record.
func recordSynthetic(t *testing.T, bin, name, dataWait, out string) {
	t.Helper()
	sockets := t.TempDir()
	t.Setenv(ipc.DirEnv, sockets)
	pub := exec.Command(filepath.Join(bin, "synthetic"), "-name", name, "-rate", "100", "-quiet",
		"-stages", "data_wait="+dataWait+",forward=4ms,backward=2ms,other=0s")
	pub.Env = append(os.Environ(), ipc.DirEnv+"="+sockets)
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer stopSynthetic(pub)
	for i := 0; ; i++ {
		if eps, _ := ipc.ListDir(sockets); len(eps) == 1 {
			break
		}
		if i == 1500 {
			t.Fatal("the synthetic publisher's socket did not appear")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"record", "--duration", "3s", "--no-gpu", "--interval", "200ms", "-o", out, name}, io.Discard, &stderr)
	if err != nil {
		t.Fatalf("record: %v\n%s", err, &stderr)
	}
}

func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	var out, stderr bytes.Buffer
	if err := run(context.Background(), args, &out, &stderr); err != nil {
		t.Fatalf("pipetop %s: %v\n%s", strings.Join(args, " "), err, &stderr)
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		t.Fatalf("pipetop %s: %v\n%s", strings.Join(args, " "), err, &out)
	}
}

// TestRecordReplaySummaryCompareTrace records two real runs that differ in
// one planted stage and looks at them with every recordings command.
func TestRecordReplaySummaryCompareTrace(t *testing.T) {
	bin, dir := t.TempDir(), t.TempDir()
	build(t, filepath.Join(bin, "synthetic"), "../../examples/synthetic")
	a, b := filepath.Join(dir, "a.pipetop"), filepath.Join(dir, "b.pipetop")
	recordSynthetic(t, bin, "runa", "2ms", a)
	recordSynthetic(t, bin, "runb", "8ms", b)

	var sa summary.Run
	runJSON(t, &sa, "summary", "--json", a)
	if sa.Name != "runa" || sa.Whole.Steps < 100 || len(sa.Throughput) == 0 || len(sa.Verdicts) == 0 {
		t.Fatalf("summary of a: %s, %d points, %d verdicts", sa.Describe(), len(sa.Throughput), len(sa.Verdicts))
	}
	if got := sa.Whole.Stage(stage.DataWait).Share; math.Abs(got-2.0/8) > 0.06 {
		t.Errorf("a: data_wait share %.2f, planted 0.25", got)
	}

	var s snapshot.Snapshot
	runJSON(t, &s, "replay", "--json", "--at", "2s", "--window", "all", a)
	if s.Replay == nil || s.Replay.AtSec != 2 || s.Summary == nil || s.Summary.Steps < 50 || s.Trainer == nil || s.Trainer.Name != "runa" {
		t.Fatalf("replay at 2s: %+v %+v", s.Replay, s.Summary)
	}
	if s.Summary.Steps >= sa.Whole.Steps {
		t.Errorf("replay at 2 s holds %d steps, the whole run %d", s.Summary.Steps, sa.Whole.Steps)
	}

	var c summary.Comparison
	runJSON(t, &c, "compare", "--json", a, b)
	want := 100 * (8.0/14 - 2.0/8)
	for _, st := range c.Stages {
		if st.Name == stage.DataWait && (!st.Significant || math.Abs(st.ShareB-st.ShareA-want) > 5) {
			t.Errorf("compare data_wait %+v, planted %+.1f points", st, want)
		}
	}
	if !c.StepTime.Significant || !strings.Contains(c.Text, "slower") {
		t.Errorf("compare: %s", c.Text)
	}

	out := filepath.Join(dir, "trace.json")
	if err := run(context.Background(), []string{"trace", a, "-o", out}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Cat string `json:"cat"`
		} `json:"traceEvents"`
	}
	raw, _ := os.ReadFile(out)
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatalf("trace: %v", err)
	}
	steps := 0
	for _, e := range tr.TraceEvents {
		if e.Cat == "step" {
			steps++
		}
	}
	if steps != sa.Whole.Steps {
		t.Errorf("trace has %d steps, summary %d", steps, sa.Whole.Steps)
	}
}

func TestRecordingsUsage(t *testing.T) {
	for _, args := range [][]string{{"replay"}, {"compare", "x"}, {"trace", "x"}, {"replay", "x", "--speed", "3"}, {"summary", "a", "b"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if _, ok := err.(usageError); !ok {
			t.Errorf("pipetop %v: %v, want a usage error", args, err)
		}
	}
	err := run(context.Background(), []string{"summary", filepath.Join(t.TempDir(), "missing")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("summary of a missing file: %v", err)
	}
}
