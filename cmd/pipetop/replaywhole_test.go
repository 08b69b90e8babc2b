package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
	"github.com/pipetop/pipetop/monitor/replay"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// inputBoundRecording writes a planted 40 s input-bound run (data_wait 30
// of 40 ms) of 1000 steps and returns its path.
func inputBoundRecording(t *testing.T) string {
	t.Helper()
	ms := time.Millisecond
	r := rectest.Run{Name: "whole", PID: 7, Start: time.Unix(1_800_000_000, 0), Steps: 1000,
		Stages: []string{stage.DataWait, stage.Forward, stage.Backward, stage.Other},
		Means:  []time.Duration{30 * ms, 5 * ms, 4 * ms, 1 * ms}, Jitter: 0.2, Seed: 3}
	path := filepath.Join(t.TempDir(), "whole.pipetop")
	if err := rectest.Write(path, r.Entries()); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayShowsTheWholeRun: without --at, replay --json and --once show
// the end of the run over all its steps, with its verdict, and say so.
func TestReplayShowsTheWholeRun(t *testing.T) {
	rec := inputBoundRecording(t)
	var s snapshot.Snapshot
	runJSON(t, &s, "replay", "--json", rec)
	if s.Replay == nil || s.Replay.View != replay.WholeRun || s.Replay.AtSec < s.Replay.LengthSec-0.01 {
		t.Fatalf("replay state %+v, want the end of the run and the view %q", s.Replay, replay.WholeRun)
	}
	if s.Window.Label != "all" || s.Summary == nil || s.Summary.Steps != 1000 {
		t.Fatalf("window %q, summary %+v: want all 1000 steps", s.Window.Label, s.Summary)
	}
	if s.Verdict == nil || s.Verdict.Kind != verdict.InputBound {
		t.Fatalf("verdict %+v, want input-bound (data_wait planted at 75 %%)", s.Verdict)
	}

	var at snapshot.Snapshot
	runJSON(t, &at, "replay", "--json", "--at", "1s", rec)
	if at.Replay.View != "" || at.Window.Label != "5s" || at.Summary == nil || at.Summary.Steps > 30 {
		t.Fatalf("--at 1s: view %q, window %q, summary %+v", at.Replay.View, at.Window.Label, at.Summary)
	}

	var text bytes.Buffer
	if err := run(context.Background(), []string{"replay", "--once", "--width", "160", rec}, &text, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the whole run", "input-bound", "1,000"} {
		if !strings.Contains(strings.ToLower(text.String()), want) {
			t.Errorf("replay --once lacks %q:\n%s", want, &text)
		}
	}
}
