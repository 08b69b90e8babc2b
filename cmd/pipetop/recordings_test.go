package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/summary"
)

// plantedWait is the synthetic publisher's stages with a planted data_wait.
func plantedWait(dataWait string) []string {
	return []string{"-stages", "data_wait=" + dataWait + ",forward=4ms,backward=2ms,other=0s"}
}

// recordSynthetic records 3 s of a real synthetic publisher at 100 steps/s
// started with args, once its sockets sockets are up, through pipetop
// record NAME.
func recordSynthetic(t *testing.T, bin, name string, sockets int, out string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(ipc.DirEnv, dir)
	pub := exec.Command(filepath.Join(bin, "synthetic"), append([]string{"-name", name, "-rate", "100", "-quiet"}, args...)...)
	pub.Env = append(os.Environ(), ipc.DirEnv+"="+dir)
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer testkit.Stop(pub)
	for i := 0; ; i++ {
		if eps, _ := ipc.ListDir(dir); len(eps) == sockets {
			break
		}
		if i == 1500 {
			t.Fatalf("the synthetic publisher's %d sockets did not appear", sockets)
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
	bin, dir := testkit.BinDir(t), t.TempDir()
	a, b := filepath.Join(dir, "a.pipetop"), filepath.Join(dir, "b.pipetop")
	recordSynthetic(t, bin, "runa", 1, a, plantedWait("2ms")...)
	recordSynthetic(t, bin, "runb", 1, b, plantedWait("8ms")...)

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

	steps := 0
	for _, e := range traceOf(t, a) {
		if e.Cat == "step" {
			steps++
		}
	}
	if steps != sa.Whole.Steps {
		t.Errorf("trace has %d steps, summary %d", steps, sa.Whole.Steps)
	}
}

// TestRecordRunOfRanks records a run of two ranks, rank 1 a planted
// straggler, through pipetop record NAME: one file holds both ranks, and
// the summary, replay and trace show each.
func TestRecordRunOfRanks(t *testing.T) {
	bin, dir := testkit.BinDir(t), t.TempDir()
	rec := filepath.Join(dir, "ranks.pipetop")
	recordSynthetic(t, bin, "pair", 2, rec, "-ranks", "2", "-straggler", "1", "-straggle", "6ms")

	var sr summary.Run
	runJSON(t, &sr, "summary", "--json", rec)
	if len(sr.Ranks) != 2 || sr.Ranks[0].Rank != 0 || sr.Ranks[1].Rank != 1 || sr.Ranks[0].PID != sr.PID {
		t.Fatalf("summary ranks %+v (run pid %d)", sr.Ranks, sr.PID)
	}
	for _, rr := range sr.Ranks {
		if rr.Whole.Steps < 150 {
			t.Errorf("rank %d: %d steps recorded in 3 s at 100 steps/s", rr.Rank, rr.Whole.Steps)
		}
	}
	if sr.Verdict.Kind != verdict.Straggler || !strings.Contains(sr.Verdict.Headline, "rank 1") {
		t.Errorf("verdict over the run: %s, want rank 1 named the straggler", sr.Verdict)
	}
	if n := len(sr.Verdicts); n == 0 || sr.Verdicts[n-1].Kind != verdict.Straggler {
		t.Errorf("verdicts over time %+v end without the straggler", sr.Verdicts)
	}
	var text bytes.Buffer
	if err := run(context.Background(), []string{"summary", rec}, &text, io.Discard); err != nil || !strings.Contains(text.String(), "2 ranks") {
		t.Errorf("summary text (%v):\n%s", err, &text)
	}

	var s snapshot.Snapshot
	runJSON(t, &s, "replay", "--json", "--at", "2500ms", rec)
	if len(s.Ranks) != 2 || s.Verdict == nil || s.Verdict.Kind != verdict.Straggler {
		t.Fatalf("replay at 2.5 s: %d ranks, verdict %+v", len(s.Ranks), s.Verdict)
	}

	procs, steps, cpu := map[string]int{}, map[int]int{}, map[int]int{} // process name -> trace pid; steps and host counters by trace pid
	for _, e := range traceOf(t, rec) {
		switch {
		case e.Name == "process_name":
			name, _ := e.Args["name"].(string)
			procs[name] = e.PID
		case e.Cat == "step":
			steps[e.PID]++
		case e.Name == "CPU busy":
			cpu[e.PID]++
		}
	}
	if rank0 := procs[fmt.Sprintf("rank 0: pair-rank0 (pid %d)", sr.Ranks[0].PID)]; len(cpu) != 1 || cpu[rank0] == 0 {
		t.Errorf("host counters by trace pid %v, want all on rank 0's process %d", cpu, rank0)
	}
	for _, rr := range sr.Ranks {
		name := fmt.Sprintf("rank %d: pair-rank%d (pid %d)", rr.Rank, rr.Rank, rr.PID)
		if pid, ok := procs[name]; !ok || steps[pid] != rr.Whole.Steps {
			t.Errorf("trace: process %q (of %v) has %d steps, want %d", name, procs, steps[pid], rr.Whole.Steps)
		}
	}
}

// traceEvent is what the tests read of a trace event.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	PID  int            `json:"pid"`
	Args map[string]any `json:"args"`
}

// traceOf runs pipetop trace on the recording rec and returns its events.
func traceOf(t *testing.T, rec string) []traceEvent {
	t.Helper()
	out := filepath.Join(t.TempDir(), "trace.json")
	if err := run(context.Background(), []string{"trace", rec, "-o", out}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	raw, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(raw, &tr)
	}
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	return tr.TraceEvents
}

func TestRecordingsUsage(t *testing.T) {
	for _, args := range [][]string{{"replay"}, {"compare", "x"}, {"trace", "x"}, {"replay", "x", "--speed", "3"}, {"summary", "a", "b"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if _, ok := err.(cli.UsageError); !ok {
			t.Errorf("pipetop %v: %v, want a usage error", args, err)
		}
	}
	err := run(context.Background(), []string{"summary", filepath.Join(t.TempDir(), "missing")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("summary of a missing file: %v", err)
	}
}
