package bisect

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
)

// short are the flags of the edge cases' bisects: two measured seconds.
var short = []string{"--seconds-per-phase", "2"}

// A crashing phase is marked failed with its exit status and the end of
// its stderr; the other phases still run; pipetop exits with status 3.
func TestCrashingPhase(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	// 6 s a phase: the forward phase reaches the 20 steps after which the
	// script asserts, even on a loaded machine.
	r := run(t, "--seconds-per-phase", "6", "--phases", "cached,forward,full", "--", python, script("train.py"), "--case", "crash")
	if r.status != 3 {
		t.Errorf("exit status %d, want 3", r.status)
	}
	fwd := phaseOf(t, r, verdict.PhaseForward)
	if fwd.Status != verdict.PhaseFailed || fwd.ExitStatus == nil || *fwd.ExitStatus == 0 || !strings.Contains(fwd.StderrTail, "AssertionError") {
		t.Errorf("forward phase: status %s, exit %v, stderr tail %q", fwd.Status, fwd.ExitStatus, fwd.StderrTail)
	}
	for _, name := range []string{verdict.PhaseCached, verdict.PhaseFull} {
		if p := phaseOf(t, r, name); p.Status != verdict.PhaseOK || p.SamplesPerSec <= 0 {
			t.Errorf("phase %s: %s, %.1f samples/s %v", name, p.Status, p.SamplesPerSec, p.Notes)
		}
	}
	var table bytes.Buffer
	r.rep.WriteTable(&table)
	for _, want := range []string{"forward     failed (exit status 1)", "| AssertionError"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// A script without a DataLoader: loader and cached are skipped and say
// why, forward and full are measured, and the verdict is the full run's.
func TestNoDataLoader(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	r := run(t, append(short, "--", python, script("noloader.py"))...)
	for _, name := range []string{verdict.PhaseLoader, verdict.PhaseCached} {
		p := phaseOf(t, r, name)
		if p.Status != verdict.PhaseSkipped || len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "no torch DataLoader") {
			t.Errorf("phase %s: %s %q", name, p.Status, p.Notes)
		}
	}
	fwd, full := phaseOf(t, r, verdict.PhaseForward), phaseOf(t, r, verdict.PhaseFull)
	// Batches made in the loop have no samples to count: steps/s compare.
	if fwd.Status != verdict.PhaseOK || full.Status != verdict.PhaseOK || fwd.Rate() <= full.Rate() || fwd.RateUnit() != "steps/s" {
		t.Errorf("forward %s %.1f %s, full %s %.1f: the forward alone should be measured and faster",
			fwd.Status, fwd.Rate(), fwd.RateUnit(), full.Status, full.Rate())
	}
	if !strings.Contains(r.rep.Verdict.Headline, "no cached phase: the script has no torch DataLoader") {
		t.Errorf("verdict does not say why: %s", r.rep.Verdict)
	}
	if r.status != 0 {
		t.Errorf("exit status %d", r.status)
	}
}

// A script that ends before its time is measured on what ran and says so;
// one that waits for input is ended by the phase's time limit.
func TestShortAndWaitingScripts(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	// 12 s a phase: the 40 steps end well before it even on a loaded
	// machine (the phase ends with the script: the limit costs nothing).
	r := run(t, "--seconds-per-phase", "12", "--phases", "full", "--", python, script("train.py"), "--case", "compute", "--steps", "40")
	if p := phaseOf(t, r, verdict.PhaseFull); p.Status != verdict.PhaseShort || p.SamplesPerSec <= 0 || !strings.Contains(strings.Join(p.Notes, " "), "measured on what ran") {
		t.Errorf("a script that ends early: %s, %.1f samples/s, %q", p.Status, p.SamplesPerSec, p.Notes)
	}
	start := time.Now()
	r = run(t, append(short, "--phases", "cached,full", "--", python, script("ask.py"))...)
	if d := time.Since(start); d > time.Minute {
		t.Errorf("a script waiting for input took %s", d)
	}
	for _, p := range r.rep.Phases {
		if p.Status != verdict.PhaseOK || p.Steps == 0 {
			t.Errorf("phase %s of a script waiting for input: %s, %d steps, %q", p.Name, p.Status, p.Steps, p.Notes)
		}
	}
}

// Batches kept as the loader returns them (dicts, dataclasses), a train
// and a validation loader, and an IterableDataset: every phase runs; the
// iterable one says it replays without epoch ends; a tiny cache cap keeps
// fewer batches and says so.
func TestBatchKinds(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	for _, tc := range []struct {
		args []string
		note string // in the cached phase's notes
	}{
		{[]string{"--case", "dict"}, ""},
		{[]string{"--case", "dict", "--batch-type", "dataclass"}, ""},
		{[]string{"--case", "trainval"}, ""},
		{[]string{"--case", "iterable"}, "epoch"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, append(append(short, "--phases", "loader,cached,full", "--", python, script("train.py")), tc.args...)...)
			for _, p := range r.rep.Phases {
				if p.Status != verdict.PhaseOK || p.SamplesPerSec <= 0 {
					t.Errorf("phase %s: %s, %.1f samples/s, %q\n%s", p.Name, p.Status, p.SamplesPerSec, p.Notes, r.stderr)
				}
			}
			if notes := strings.Join(phaseOf(t, r, verdict.PhaseCached).Notes, " "); !strings.Contains(notes, tc.note) {
				t.Errorf("cached notes %q lack %q", notes, tc.note)
			}
		})
	}
	r := run(t, append(short, "--phases", "cached", "--cache-mb", "0.001", "--", python, script("train.py"), "--case", "dict")...)
	if p := phaseOf(t, r, verdict.PhaseCached); p.Status != verdict.PhaseOK || !strings.Contains(strings.Join(p.Notes, " "), "cache") {
		t.Errorf("a cache cap below one batch: %s %q", p.Status, p.Notes)
	}
}

// Two Gloo DDP ranks started by a launcher: every rank runs the same
// phase, each phase has a row per rank and the job's samples/s, and the
// rank with the slow loader is named the loader phase's straggler.
func TestDDPRanks(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	r := run(t, append(short, "--", "sh", script("launch.sh"), "2")...)
	for _, p := range r.rep.Phases {
		if p.Status != verdict.PhaseOK || len(p.Ranks) != 2 {
			t.Errorf("phase %s: %s, %d ranks, %q\n%s", p.Name, p.Status, len(p.Ranks), p.Notes, r.stderr)
			continue
		}
		if sum := p.Ranks[0].SamplesPerSec + p.Ranks[1].SamplesPerSec; !testkit.Within(p.SamplesPerSec, sum, 0.01) {
			t.Errorf("phase %s: job %.1f samples/s, ranks sum to %.1f", p.Name, p.SamplesPerSec, sum)
		}
	}
	// Alone, rank 1's loader (three times the work an item) is the
	// straggler; on cached batches the ranks keep pace.
	if ld := phaseOf(t, r, verdict.PhaseLoader); ld.StragglerRank == nil || *ld.StragglerRank != 1 {
		t.Errorf("the loader phase names no straggler rank 1: %+v", ld.Ranks)
	}
	if c := phaseOf(t, r, verdict.PhaseCached); c.StragglerRank != nil {
		t.Errorf("on cached batches rank %d is called a straggler: %+v", *c.StragglerRank, c.Ranks)
	}
	var table bytes.Buffer
	r.rep.WriteTable(&table)
	for _, want := range []string{"  rank 1", "loader: straggler: rank 1 delivers"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}

// Ctrl-C stops the running phase's whole process group and prints the
// table of what ran, with exit status 130.
func TestInterrupt(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	tag := t.TempDir() // in every process's environment, to find them
	cmd := exec.Command(pipetop, "bisect", "--no-tui", "--json", "--seconds-per-phase", "4", "--", python, script("train.py"), "--case", "contention")
	cmd.Env = append(env(t), "PIPETOP_BISECT_TEST_TAG="+tag)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "phase cached") {
	}
	time.Sleep(2 * time.Second) // into the cached phase, before its 4 s end
	cmd.Process.Signal(syscall.SIGINT)
	go func() {
		for sc.Scan() {
		}
	}()
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want status 130", err)
	}
	rep, err := bisect.DecodeReport(stdout.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if !rep.Interrupted || len(rep.Phases) != 2 || rep.Phases[0].Status != verdict.PhaseOK || rep.Phases[1].Status != verdict.PhaseStopped {
		t.Errorf("interrupted %v, phases %+v", rep.Interrupted, rep.Phases)
	}
	if left := tagged(tag); len(left) > 0 {
		t.Errorf("processes of the stopped phase still run: %v", left)
	}
}

// tagged are the live processes whose environment holds tag.
func tagged(tag string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(b, []byte("PIPETOP_BISECT_TEST_TAG="+tag)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(d, "stat"))
		if !strings.Contains(string(stat), ") Z ") {
			cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
			out = append(out, filepath.Base(d)+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// --record keeps each phase's recording, which pipetop reads back, and the
// result beside them.
func TestRecord(t *testing.T) {
	testkit.Concurrent(t)
	requireTorch(t)
	dir := filepath.Join(t.TempDir(), "rec")
	r := run(t, append(short, "--record", dir, "--phases", "cached,full", "--", python, script("train.py"), "--case", "compute")...)
	kept, err := bisect.ReadReport(filepath.Join(dir, "bisect.json"))
	if err != nil || len(kept.Phases) != len(r.rep.Phases) || kept.Verdict.String() != r.rep.Verdict.String() {
		t.Fatalf("kept report: %v, %+v", err, kept)
	}
	for _, phase := range []string{"cached", "full"} {
		cmd := exec.Command(pipetop, "summary", "--json", filepath.Join(dir, phase+".pipetop"))
		out, err := cmd.Output()
		if err != nil || !bytes.Contains(out, []byte(`"steps"`)) {
			t.Errorf("pipetop summary of the %s phase's recording: %v\n%s", phase, err, out)
		}
	}
}
