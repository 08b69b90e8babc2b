package tune

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/tune"
)

// tuneFrom runs pipetop tune --from the bisect report at from, in dir,
// with budget and 3 s trials, and returns its report.
func tuneFrom(t *testing.T, dir, from string, budget time.Duration) tune.Report {
	t.Helper()
	return runTune(t, dir, []string{"--from", from, "--budget", budget.Round(100 * time.Millisecond).String()}, "--case", "inproc_cache")
}

// A planted loader whose items the workers cannot share (an in-process
// cache): num_workers=0 delivers 5x or more the script's one worker in
// loader trials. With a budget too small for the whole search, tune
// confirms it at once and advises it, measured in full runs; with a
// budget too small to confirm anything, the advice names it unconfirmed,
// with its trial's figure and the command that confirms it.
func TestBudgetNeverHidesAFind(t *testing.T) {
	testkit.Serial(t)
	requireTorch(t)
	dir := t.TempDir()
	from := filepath.Join(dir, "bisect.json")
	cmd := exec.Command(pipetop, "bisect", "--no-tui", "--json", "--seconds-per-phase", "3", "--phases", "loader,cached,full", "--",
		python, script(), "--case", "inproc_cache")
	cmd.Env = env(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bisect: %v", err)
	}
	if err := os.WriteFile(from, out, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := bisect.DecodeReport(out)
	if err != nil {
		t.Fatal(err)
	}
	var trial float64 // the longer of a loader and a full trial
	for _, p := range b.Phases {
		if p.Name != verdict.PhaseCached {
			trial = max(trial, p.WallSeconds)
		}
	}
	one := time.Duration(trial * float64(time.Second))
	t.Logf("bisect verdict: %s; a trial takes about %s", b.Verdict, one)

	var first tune.Report
	t.Run("too small for the whole search", func(t *testing.T) {
		// Two search trials and three rounds of two full runs, and two
		// trials' margin: the whole search takes ten trials more.
		r := tuneFrom(t, t.TempDir(), from, 10*one)
		first = r
		if r.Winner == nil || r.Winner.Setting.NumWorkers != 0 || r.Advice != "num_workers=0" || r.Winner.Runs < 1 {
			t.Fatalf("winner %+v, advice %q, unconfirmed %+v", r.Winner, r.Advice, r.Unconfirmed)
		}
		if !bigFind(r) {
			t.Errorf("num_workers=0 is under 5x the script's own in the loader trials: %+v", r.Trials)
		}
		if !r.OutOfBudget || searched(r) >= 10 {
			t.Errorf("out of budget %v after %d search trials: the budget fit the whole search", r.OutOfBudget, searched(r))
		}
	})
	t.Run("too small to confirm", func(t *testing.T) {
		dir := t.TempDir()
		budget := searchAndOneRun(first)
		if budget <= 0 {
			budget = 3 * one
		}
		t.Logf("budget %s: the two search trials and one full run, as long as they took in the tune before", budget)
		r := tuneFrom(t, dir, from, budget)
		u := r.Unconfirmed
		if u == nil || u.Setting.NumWorkers != 0 || r.Advice != "" || r.Plan != nil || !bigFind(r) {
			t.Fatalf("unconfirmed %+v, advice %q, trials %+v", u, r.Advice, r.Trials)
		}
		var table bytes.Buffer
		r.WriteTable(&table)
		text := strings.Join(strings.Fields(table.String()), " ")
		for _, want := range []string{"advice: num_workers=0:", "unconfirmed", "pipetop tune --from tune.json --budget"} {
			if !strings.Contains(text, want) {
				t.Errorf("the advice lacks %q:\n%s", want, table.String())
			}
		}
		if strings.Contains(text, "no setting tried beat them") {
			t.Errorf("the advice hides the find:\n%s", table.String())
		}
		var kept tune.Report
		if b, err := os.ReadFile(filepath.Join(dir, "tune.json")); err != nil || json.Unmarshal(b, &kept) != nil || kept.Unconfirmed == nil {
			t.Errorf("tune.json does not keep the unconfirmed find: %v", err)
		}
	})
}

// searchAndOneRun is the time the loader trials of r's search took and
// one of its full runs (the median of the baseline's): the two search
// trials fit in it even when each takes half again as long, and their
// confirmation (a full run of each, costed at the bisect's full phase)
// does not unless they run in half the time. 0 when r has no such trials.
func searchAndOneRun(r tune.Report) time.Duration {
	var search float64
	var full []float64
	for _, tr := range r.Trials {
		switch {
		case !tr.Confirm && tr.Phase == verdict.PhaseLoader:
			search += tr.WallSeconds
		case tr.Confirm && tr.Setting == r.Baseline:
			full = append(full, tr.WallSeconds)
		}
	}
	if search == 0 || len(full) == 0 {
		return 0
	}
	sort.Float64s(full)
	return time.Duration((search + full[len(full)/2]) * float64(time.Second))
}

// bigFind is whether num_workers=0 delivered 5x or more the baseline's
// samples/s in the loader trials.
func bigFind(r tune.Report) bool {
	var zero, base float64
	for _, tr := range r.Trials {
		switch {
		case tr.Confirm || tr.Phase != verdict.PhaseLoader:
		case tr.Setting == r.Baseline:
			base = tr.SamplesPerSec
		case tr.Setting.NumWorkers == 0:
			zero = tr.SamplesPerSec
		}
	}
	return base > 0 && zero >= 5*base
}

// searched is how many search trials ran.
func searched(r tune.Report) int {
	n := 0
	for _, tr := range r.Trials {
		if !tr.Confirm && !tr.Prior {
			n++
		}
	}
	return n
}
