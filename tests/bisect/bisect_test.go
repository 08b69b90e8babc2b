package bisect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
)

const python = "/usr/bin/python3"

// phaseSeconds is each phase's measured time here: short, as the planted
// costs are steady from the first steps.
const phaseSeconds = 3

var pipetop string // the binary under test

func TestMain(m *testing.M) {
	dir, err := testkit.BinDirErr()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pipetop = filepath.Join(dir, "pipetop")
	os.Exit(m.Run())
}

// root is the module's root.
func root() string {
	dir, _ := testkit.ModuleRoot()
	return dir
}

// script is the planted scripts' path.
func script(name string) string {
	return filepath.Join(root(), "cmd", "pipetop", "testdata", "bisect", name)
}

// requireTorch fails unless Debian's Python imports torch and zarr.
func requireTorch(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import torch, zarr").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch and zarr (scripts/install-deps.sh installs them): %v\n%s", python, err, out)
	}
}

// env is the environment of a test's commands: its own socket directory
// and the input case's data in its own temporary directory.
func env(t *testing.T) []string {
	return append(os.Environ(), ipc.DirEnv+"="+testkit.SocketDir(t), "TMPDIR="+dataDir(t))
}

// dataDir is one temporary directory for the planted data of the whole
// package run (the input case writes its Zarr store once).
func dataDir(t *testing.T) string {
	d := filepath.Join(os.TempDir(), "pipetop-bisect-test-data")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// result is one pipetop bisect run: its report, stderr and exit status.
type result struct {
	rep    bisect.Report
	stderr string
	status int
}

// run runs pipetop bisect --json with args (flags, then -- CMD ARGS).
func run(t *testing.T, args ...string) result {
	t.Helper()
	return runBisect(t, exec.Command(pipetop, append([]string{"bisect", "--no-tui", "--json", "--grace", "2s"}, args...)...), fmt.Sprint(args))
}

// runBisect runs cmd, a pipetop bisect --json (what names it in a
// failure), in the tests' environment and reads its report.
func runBisect(t *testing.T, cmd *exec.Cmd, what string) result {
	t.Helper()
	cmd.Env = env(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.status = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rep, err := bisect.DecodeReport(stdout.Bytes())
	if err != nil {
		t.Fatalf("pipetop bisect %s: %v (status %d)\nstdout:\n%s\nstderr:\n%s", what, err, res.status, stdout.String(), res.stderr)
	}
	res.rep = rep
	return res
}

// phaseOf is the named phase of a report.
func phaseOf(t *testing.T, r result, name string) verdict.PhaseResult {
	t.Helper()
	for _, p := range r.rep.Phases {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no phase %s in the report; stderr:\n%s", name, r.stderr)
	return verdict.PhaseResult{}
}

// control runs the planted script's own measurement of mode and returns
// its samples/s. It runs under the same automatic instrumentation as the
// phases (python -m pipetop_publish.auto, what pipetop run starts), so
// that the two differ only in who runs the experiment: the script, or
// bisect inside it.
func control(t *testing.T, args []string, mode string) float64 {
	t.Helper()
	argv := append([]string{"-m", "pipetop_publish.auto", script("train.py")}, args...)
	cmd := exec.Command(python, append(argv, "--control", mode, "--seconds", strconv.Itoa(phaseSeconds))...)
	cmd.Env = append(env(t), "PYTHONPATH="+filepath.Join(root(), "clients", "python"), "PIPETOP_SUMMARY=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("control %s %v: %v", mode, args, err)
	}
	var c struct {
		SamplesPerSec float64 `json:"samples_per_sec"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &c); err != nil || c.SamplesPerSec <= 0 {
		t.Fatalf("control %s %v printed %q: %v", mode, args, out, err)
	}
	return c.SamplesPerSec
}

// containsAny says whether s contains one of subs.
func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// controlOf is the script's own measurement that each phase must agree
// with.
var controlOf = map[string]string{
	verdict.PhaseLoader:  "loader",
	verdict.PhaseCached:  "network",
	verdict.PhaseForward: "forward",
	verdict.PhaseFull:    "full",
}

// countedCase is the planted case whose phases are each run as the
// script's own control too, to check pipetop's counting (steps, samples,
// seconds) against the script's: the counting is the same in every case,
// and bench/bisect_accuracy.sh holds every case to ±15 % over medians.
const countedCase = "seed"

// Each planted bottleneck: the verdict that names it with its figures;
// in countedCase, every phase's samples/s beside what the script measures
// of the same part itself. Single runs of the same loop differ by 2x on a loaded 2-core
// machine (the controls themselves, at tens of thousands of batches a
// second), so one run fails here only beyond 0.25x-4x: a measurement that
// counts batches as samples, or loses most steps. It logs beyond ±30 %;
// bench/bisect_accuracy.sh holds the medians of alternating runs to ±15 %.
// A "|" in a wanted phrase separates alternatives: on a loaded box the
// seed's cached batches are compute-bound (no core idles), on a quiet one
// training-thread-bound. A case that misses is run once more, and the
// second run must pass (both are logged).
func TestPlantedBottlenecks(t *testing.T) {
	testkit.Serial(t)
	requireTorch(t)
	for _, tc := range []struct {
		name     string
		want     verdict.Kind
		contains []string
	}{
		{"input", verdict.InputBound, []string{"the loader alone delivers", "on cached batches", "faster", "rechunk"}},
		{"compute", verdict.ComputeBound, []string{"the input is not the problem", "on cached batches"}},
		{"contention", verdict.Balanced, []string{"contention", "threads waited for a CPU", "num_workers"}},
		{"seed", verdict.InputBound, []string{"the input costs", "the rest is the network", "training-thread-bound on cached batches|compute-bound on cached batches"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--case", tc.name}
			want := map[string]float64{}
			if tc.name == countedCase {
				for phase, mode := range controlOf {
					want[phase] = control(t, args, mode)
				}
			}
			run := append([]string{"--seconds-per-phase", strconv.Itoa(phaseSeconds), "--", python, script("train.py")}, args...)
			bad := plantedRun(t, run, want, tc.want, tc.contains)
			if len(bad) > 0 {
				// A bisection is an experiment on a shared machine: once in a
				// make test run a 3 s phase ran 4x slower than alone (the
				// input case's full phase: 25 it/s, 100 in every other run),
				// which reads as contention. A second run must then agree.
				t.Logf("first run: %s; running the bisection again", strings.Join(bad, "; "))
				bad = plantedRun(t, run, want, tc.want, tc.contains)
			}
			for _, b := range bad {
				t.Error(b)
			}
		})
	}
}

// plantedRun runs one bisection of a planted case and says what is wrong
// with it: a phase against the script's own count (want, by phase), the
// verdict's kind and its phrases (a "|" separates alternatives).
func plantedRun(t *testing.T, args []string, want map[string]float64, kind verdict.Kind, contains []string) []string {
	t.Helper()
	r := run(t, args...)
	var table bytes.Buffer
	r.rep.WriteTable(&table)
	t.Logf("controls %v\n%s", want, table.String())
	var bad []string
	for _, p := range r.rep.Phases {
		if p.Status != verdict.PhaseOK {
			bad = append(bad, fmt.Sprintf("phase %s: status %s %v", p.Name, p.Status, p.Notes))
		}
		if want[p.Name] == 0 {
			continue
		}
		if r := p.SamplesPerSec / want[p.Name]; r < 0.25 || r > 4 {
			bad = append(bad, fmt.Sprintf("phase %s: %.1f samples/s, the script measures %.1f itself (%.2fx)", p.Name, p.SamplesPerSec, want[p.Name], r))
		} else if !testkit.Within(p.SamplesPerSec, want[p.Name], 0.30) {
			t.Logf("phase %s: %.1f samples/s, the script measures %.1f itself: outside ±30 %% in one run", p.Name, p.SamplesPerSec, want[p.Name])
		}
	}
	if r.rep.Verdict.Kind != kind {
		bad = append(bad, fmt.Sprintf("verdict %s, want %s: %s", r.rep.Verdict.Kind, kind, r.rep.Verdict))
	}
	for _, c := range contains {
		if !containsAny(r.rep.Verdict.String(), strings.Split(c, "|")) {
			bad = append(bad, fmt.Sprintf("verdict lacks %q: %s", c, r.rep.Verdict))
		}
	}
	if r.status != 0 {
		bad = append(bad, fmt.Sprintf("exit status %d", r.status))
	}
	return bad
}
