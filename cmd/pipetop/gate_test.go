package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
	"github.com/pipetop/pipetop/monitor/summary"
)

// gateRun writes a planted run of 3000 steps of about 20 ms, every stage
// scaled by slower (1.10: 10 % slower), with per-step jitter of ±30 % and
// a drift of ±5 % every 50 steps, and returns its path.
func gateRun(t *testing.T, dir string, seed uint64, slower float64) string {
	t.Helper()
	ms := float64(time.Millisecond)
	means := []time.Duration{}
	for _, m := range []float64{4, 9, 6, 1} {
		means = append(means, time.Duration(m*ms*slower))
	}
	r := rectest.Run{Name: "gate", PID: 11, Start: time.Unix(1_800_000_000, 0), Steps: 3000,
		Stages: []string{stage.DataWait, stage.Forward, stage.Backward, stage.Other},
		Means:  means, Jitter: 0.3, Wobble: 0.05, Seed: seed}
	path := filepath.Join(dir, fmt.Sprintf("run-%d-%.2f.pipetop", seed, slower))
	if err := rectest.Write(path, r.Entries()); err != nil {
		t.Fatal(err)
	}
	return path
}

// compareGate runs pipetop compare --fail-if-slower 5 and returns the exit
// status main would exit with and the output.
func compareGate(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"compare", "--fail-if-slower", "5"}, args...), &out, &errb)
	return exitCode(err, io.Discard), out.String() + errb.String()
}

// TestCompareGate: runs planted 3 %, 10 % and 30 % slower than a baseline
// pass, fail and fail --fail-if-slower 5, with one line saying what
// regressed; --json carries the same decision.
func TestCompareGate(t *testing.T) {
	dir := t.TempDir()
	base := gateRun(t, dir, 1, 1)
	for _, c := range []struct {
		slower float64
		code   int
	}{{1.03, 0}, {1.10, exitRegression}, {1.30, exitRegression}} {
		b := gateRun(t, dir, 2, c.slower)
		code, out := compareGate(t, base, b)
		last := lastLine(out)
		if code != c.code {
			t.Errorf("%.0f %% slower: exit %d, want %d\n%s", 100*(c.slower-1), code, c.code, out)
		}
		if c.code != 0 && (!strings.HasPrefix(last, "REGRESSION") || !strings.Contains(last, "step time") || !strings.Contains(last, "samples/s")) {
			t.Errorf("%.0f %% slower: last line %q, want the step time and samples/s regression", 100*(c.slower-1), last)
		}
		if c.code == 0 && !strings.HasPrefix(last, "ok:") {
			t.Errorf("%.0f %% slower: last line %q, want ok", 100*(c.slower-1), last)
		}
		var cmp summary.Comparison
		code2, js := compareGate(t, "--json", base, b)
		if err := json.Unmarshal([]byte(js), &cmp); err != nil || cmp.Gate == nil {
			t.Fatalf("--json: %v\n%s", err, js)
		}
		if code2 != code || cmp.Gate.Regressed != (c.code != 0) || cmp.ThroughputUnit != "samples/s" {
			t.Errorf("%.0f %% slower: --json exit %d, gate %+v", 100*(c.slower-1), code2, cmp.Gate)
		}
		if got := cmp.Gate.StepSlowerPct; got < 100*(c.slower-1)-2 || got > 100*(c.slower-1)+2 {
			t.Errorf("%.0f %% slower: measured %.1f %%", 100*(c.slower-1), got)
		}
	}
}

// TestCompareGateIdenticalRuns: two runs planted alike (other seeds) never
// fail the gate, over 20 pairs.
func TestCompareGateIdenticalRuns(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		a, b := gateRun(t, dir, uint64(100+2*i), 1), gateRun(t, dir, uint64(101+2*i), 1)
		if code, out := compareGate(t, a, b); code != 0 {
			t.Fatalf("pair %d of identical runs: exit %d\n%s", i, code, out)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
