package main

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/bisect/bisecttest"
)

// TestCompareBisects: two bisect files side by side: each phase's
// samples/s in A and B and B/A, a status that changed, both verdicts; the
// same in --json.
func TestCompareBisects(t *testing.T) {
	dir := t.TempDir()
	a := bisectFile(t, dir, "a.json", 600)
	r := bisecttest.Constructed(300)
	r.Phases = slices.Delete(r.Phases, 1, 2) // B has no cached phase
	b := reportFile(t, dir, "b.json", r)

	var out strings.Builder
	if err := run(t.Context(), []string{"compare", a, b}, &out, &out); err != nil {
		t.Fatalf("compare: %v\n%s", err, &out)
	}
	text := out.String()
	for _, want := range []string{"A: " + a, "B: " + b, "1,280", "600", "300", "0.50x", "1.00x", "skipped → absent", "failed",
		"verdict A: " + bisecttest.Constructed(600).Verdict.Headline[:40], "verdict B: " + r.Verdict.Headline[:40]} {
		if !strings.Contains(text, want) {
			t.Errorf("compare lacks %q:\n%s", want, text)
		}
	}

	var c bisect.Comparison
	runJSON(t, &c, "compare", "--json", a, b)
	if c.Schema != bisect.CompareSchema || len(c.Phases) != 4 || c.Gate != nil || c.A.File != a || c.B.Verdict.Headline != r.Verdict.Headline {
		t.Fatalf("--json: %+v", c)
	}
	full := c.Phases[3]
	if full.Phase != verdict.PhaseFull || full.Ratio == nil || *full.Ratio != 0.5 || full.SamplesPerSecA != 600 || full.StatusChanged {
		t.Errorf("--json full phase: %+v", full)
	}
	if cached := c.Phases[1]; cached.Phase != verdict.PhaseCached || cached.Ratio != nil || !cached.StatusChanged || cached.StatusB != bisect.StatusAbsent {
		t.Errorf("--json cached phase: %+v", cached)
	}
}

// TestCompareBisectGate: --fail-if-slower 5 passes B's full phase 2 %
// slower, fails it 10 % slower and failed outright (exit 4, one line
// saying what regressed), the same with --json; a report without a full
// phase cannot be gated.
func TestCompareBisectGate(t *testing.T) {
	dir := t.TempDir()
	a := bisectFile(t, dir, "a.json", 600)
	failed := bisecttest.Constructed(600)
	exit := 137
	failed.Phases[3] = verdict.PhaseResult{Name: verdict.PhaseFull, Status: verdict.PhaseFailed, ExitStatus: &exit}
	for _, c := range []struct {
		name, b string
		code    int
		line    string
	}{
		{"2 % slower", bisectFile(t, dir, "b2.json", 588), 0, "ok: B is not more than 5 % slower than A: full phase samples/s -2.0 % (600 → 588; no noise model)"},
		{"10 % slower", bisectFile(t, dir, "b10.json", 540), exitRegression, "REGRESSION: B is more than 5 % slower than A: full phase samples/s -10.0 % (600 → 540; no noise model)"},
		{"failed", reportFile(t, dir, "bfail.json", failed), exitRegression, "REGRESSION: B's full phase has no samples/s (failed); A's ran at 600"},
	} {
		code, out := compareGate(t, a, c.b)
		if code != c.code || lastLine(out) != c.line {
			t.Errorf("%s: exit %d, last line %q; want %d, %q", c.name, code, lastLine(out), c.code, c.line)
		}
		var cmp bisect.Comparison
		code2, js := compareGate(t, "--json", a, c.b)
		if err := json.Unmarshal([]byte(js), &cmp); err != nil || cmp.Gate == nil {
			t.Fatalf("%s --json: %v\n%s", c.name, err, js)
		}
		if code2 != c.code || cmp.Gate.Line != c.line || cmp.Gate.Regressed != (c.code != 0) {
			t.Errorf("%s --json: exit %d, gate %+v", c.name, code2, cmp.Gate)
		}
	}
	noFull := bisecttest.Constructed(600)
	noFull.Phases = noFull.Phases[:3]
	err := run(t.Context(), []string{"compare", "--fail-if-slower", "5", a, reportFile(t, dir, "nofull.json", noFull)}, &strings.Builder{}, &strings.Builder{})
	if !errors.Is(err, bisect.ErrNoFull) || exitCode(err, io.Discard) != 1 {
		t.Errorf("B without a full phase: %v", err)
	}
}

// TestCompareBisectWithARun: a bisect file and a run's recording, either
// way round, is an error naming which is which.
func TestCompareBisectWithARun(t *testing.T) {
	dir := t.TempDir()
	bis, rec := bisectFile(t, dir, "bisect.json", 600), gateRun(t, dir, 1, 1)
	for _, args := range [][]string{{bis, rec}, {rec, bis}} {
		err := run(t.Context(), append([]string{"compare"}, args...), &strings.Builder{}, &strings.Builder{})
		if err == nil {
			t.Fatalf("compare %v: no error", args)
		}
		msg := err.Error()
		for _, want := range []string{"(" + bis + ") is a bisect report", "(" + rec + ") is a run"} {
			if !strings.Contains(msg, want) {
				t.Errorf("compare %v: %q lacks %q", args, msg, want)
			}
		}
	}
}
