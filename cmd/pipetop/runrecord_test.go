package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/monitor/summary"
)

// TestRunRecordsEveryRank: pipetop run --record FILE of a command that
// starts two ranks of a run (by hand, with torchrun's environment) writes
// one recording that holds both ranks' steps, which summary and report
// read.
func TestRunRecordsEveryRank(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t)
	rec := filepath.Join(t.TempDir(), "run.pipetop")
	script := example("loop.py")
	rank := func(r string) string {
		return "RANK=" + r + " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 " + debPython + " " + script + " --steps 100"
	}
	sh := rank("0") + " & " + rank("1") + "; wait"
	cmd := e.command(t, nil, "--no-tui", "--record", rec, "--", "sh", "-c", sh)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("pipetop run --record: %v\n%s", err, &errb)
	}
	if !strings.Contains(errb.String(), "recording the run to "+rec) {
		t.Errorf("stderr does not say where it records:\n%s", &errb)
	}
	r, err := summary.FromFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Ranks) != 2 {
		t.Fatalf("the recording holds ranks %+v, want 0 and 1", r.Ranks)
	}
	for _, rr := range r.Ranks {
		// The recorder attaches once a rank publishes: the steps of
		// the first moments before that are not in the recording.
		if rr.Whole.Steps < 75 {
			t.Errorf("rank %d: %d steps recorded of 100", rr.Rank, rr.Whole.Steps)
		}
	}
	page := filepath.Join(t.TempDir(), "run.html")
	if err := run(context.Background(), []string{"report", rec, "-o", page}, io.Discard, io.Discard); err != nil {
		t.Fatalf("report of the recording: %v", err)
	}
}
