package bisect

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/tune"
)

// runTagged runs pipetop CMD (bisect or tune) --no-tui --json with args,
// every process it starts tagged with a fresh tag (to find leftovers):
// its stdout, stderr, exit status and the tag.
func runTagged(t *testing.T, cmd string, args ...string) (stdout []byte, stderr string, status int, tag string) {
	t.Helper()
	tag = t.TempDir()
	c := exec.Command(pipetop, append([]string{cmd, "--no-tui", "--json"}, args...)...)
	c.Env, c.Dir = append(env(t), "PIPETOP_BISECT_TEST_TAG="+tag), tag
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), errb.String(), status, tag
}

// A script that cannot run is one clear failure: the first phase fails
// before a step is measured, in a way every phase would (nothing
// instrumented had connected, or the phase before failed the same way),
// and the bisect stops there; its verdict is the script's error, its exit
// status the script's; nothing of it is left running. The cases run in
// parallel: they read no CPU shares.
func TestScriptThatCannotRun(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	for _, tc := range []struct {
		name   string
		argv   []string
		flags  []string
		status int
		phases []string // the phases run, in order
		phrase string   // in the verdict's headline
	}{
		{"missing script", []string{python, "/nonexistent/pipetop-missing.py"}, nil, 2,
			[]string{verdict.PhaseLoader}, "every phase would fail: " + python + ": can't open file"},
		{"exits at import", []string{python, script("fails.py"), "--how", "import"}, nil, 1,
			[]string{verdict.PhaseLoader}, "every phase would fail: ModuleNotFoundError: No module named 'pipetop_planted_module_that_is_not_there'"},
		{"sleeps, never trains", []string{python, script("fails.py"), "--how", "sleep"}, []string{"--start-timeout", "4s"}, bisect.ExitFailed,
			[]string{verdict.PhaseLoader}, "nothing instrumented connected within 4s: it imported torch but reached no DataLoader batch, forward or backward"},
		{"not Python", []string{"sleep", "30"}, []string{"--start-timeout", "4s"}, bisect.ExitFailed,
			[]string{verdict.PhaseLoader}, "nothing instrumented connected within 4s: the command ran no Python process (it ran sleep)"},
		{"raises at its 4th step", []string{python, script("fails.py"), "--how", "step4"}, nil, 1,
			[]string{verdict.PhaseLoader, verdict.PhaseCached, verdict.PhaseForward},
			"the script fails the same way in the cached and forward phases before a step is measured, and would in the phases after: RuntimeError: planted failure at step 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, stderr, status, tag := runTagged(t, "bisect", append(append(append([]string{}, short...), tc.flags...), append([]string{"--"}, tc.argv...)...)...)
			rep, err := bisect.DecodeReport(out)
			if err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
			}
			var ran []string
			for _, p := range rep.Phases {
				ran = append(ran, p.Name)
			}
			if strings.Join(ran, ",") != strings.Join(tc.phases, ",") {
				t.Errorf("phases run %v, want %v\n%s", ran, tc.phases, stderr)
			}
			if status != tc.status {
				t.Errorf("exit status %d, want %d", status, tc.status)
			}
			v := rep.Verdict
			if v.Kind != verdict.ScriptFailed || !strings.Contains(v.Headline, tc.phrase) {
				t.Errorf("verdict %s: %s; want %q", v.Kind, v, tc.phrase)
			}
			if strings.Contains(v.String(), verdict.PhaseTrainFixed) {
				t.Errorf("a pipetrain phase in the verdict: %s", v)
			}
			// The script's error is printed once: by the one phase that
			// failed that way, or by the two that showed it repeats.
			if n := printed(stderr, errorLineOf(tc.phrase)); n > 2 {
				t.Errorf("the script's error is printed %d times:\n%s", n, stderr)
			}
			if left := tagged(tag); len(left) > 0 {
				t.Errorf("processes left running: %v", left)
			}
		})
	}
}

// errorLineOf is how the script's own error line begins in a verdict
// phrase ("" for a phrase that quotes none).
func errorLineOf(phrase string) string {
	for _, e := range []string{python + ": can't open file", "ModuleNotFoundError:", "RuntimeError:"} {
		if strings.Contains(phrase, e) {
			return e
		}
	}
	return ""
}

// printed is how many lines of stderr the script printed that begin with
// prefix (pipetop's own lines left out); 0 for no prefix.
func printed(stderr, prefix string) int {
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if prefix != "" && strings.HasPrefix(strings.TrimSpace(line), prefix) {
			n++
		}
	}
	return n
}

// pipetop tune on a script that cannot run: the same message, a non-zero
// exit status (the script's), no advice and no report file.
func TestTuneOnAScriptThatCannotRun(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	out, stderr, status, tag := runTagged(t, "tune", "--seconds-per-trial", "2", "--", python, "/nonexistent/pipetop-missing.py")
	var r tune.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	if status != 2 || !r.Failed || r.Advice != "" || r.Plan != nil || len(r.Trials) != 0 {
		t.Errorf("exit status %d, failed %v, advice %q, %d trials", status, r.Failed, r.Advice, len(r.Trials))
	}
	if !strings.Contains(r.Reason, "every phase would fail: "+python+": can't open file") || strings.Contains(r.Reason, "nothing in the input pipeline helps") {
		t.Errorf("reason %q", r.Reason)
	}
	if _, err := os.Stat(filepath.Join(tag, "tune.json")); err == nil {
		t.Error("a report file was written for a script that cannot run")
	}
	var table bytes.Buffer
	r.WriteTable(&table)
	if !strings.Contains(table.String(), "advice:  none: the script fails whatever is tried") {
		t.Errorf("table:\n%s", table.String())
	}
}
