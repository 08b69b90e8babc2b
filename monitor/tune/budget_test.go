package tune

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
)

// clockedTuner is fakeTuner on a clock that each trial moves on by wall
// (a loader or full trial alike), with a budget; the bisect it starts
// from took wall a phase too.
func clockedTuner(t *testing.T, base Setting, budget, wall time.Duration, model loaderModel) *tuner {
	tu := fakeTuner(t, base, 2, model)
	at := time.Unix(1e9, 0)
	tu.start, tu.now = at, func() time.Time { return at }
	tu.c.Budget, tu.c.Bisect.Argv, tu.c.Out = budget, []string{"python3", "train.py"}, "tune.json"
	tu.r.Bisect.Phases = []verdict.PhaseResult{{Name: verdict.PhaseLoader, WallSeconds: wall.Seconds()}, {Name: verdict.PhaseFull, WallSeconds: wall.Seconds()}}
	inner := tu.run
	tu.run = func(ctx context.Context, tr bisect.Trial) verdict.PhaseResult {
		p := inner(ctx, tr)
		at = at.Add(wall)
		p.WallSeconds = wall.Seconds()
		return p
	}
	return tu
}

// inProcessCache is the planted loader of the budget cases: an item
// cache the workers cannot share, so that loading on the training thread
// (num_workers=0) delivers 13x the script's two workers; more workers
// only help a little.
func inProcessCache(s Setting) (float64, float64) {
	if s.NumWorkers == 0 {
		return 48, 1
	}
	return 3.7 + 0.1*float64(s.NumWorkers), 0.9 * float64(s.NumWorkers)
}

// A loader trial 2x the baseline's is confirmed at once; with a budget
// too small for the whole search the search stops to leave the time for
// that confirmation, and its setting is advised, measured in full runs.
func TestBigFindIsConfirmedFirst(t *testing.T) {
	const wall = 10 * time.Second
	// Two search trials and three rounds of the find and the baseline, and
	// a little: the whole search would take about ten trials more.
	tu := clockedTuner(t, Setting{NumWorkers: 2}, 8*wall+5*time.Second, wall, inProcessCache)
	tu.tune(context.Background())
	r := tu.r
	if r.Winner == nil || r.Winner.Setting.NumWorkers != 0 || r.Advice != "num_workers=0" || r.Unconfirmed != nil {
		t.Fatalf("winner %+v, advice %q, unconfirmed %+v; trials %+v", r.Winner, r.Advice, r.Unconfirmed, r.Trials)
	}
	if r.Winner.Runs != 3 || !r.OutOfBudget {
		t.Errorf("the find ran %d full runs, out of budget %v", r.Winner.Runs, r.OutOfBudget)
	}
	search := 0
	for _, tr := range r.Trials {
		if !tr.Confirm {
			search++
		}
	}
	if search != 2 {
		t.Errorf("%d search trials, want the baseline's and the find's: %+v", search, r.Trials)
	}
}

// The find is confirmed first: its full runs come right after its loader
// trial, before the search goes on (here with no budget to stop it), so
// that no later budget can leave it unconfirmed.
func TestBigFindIsConfirmedBeforeTheSearchGoesOn(t *testing.T) {
	tu := clockedTuner(t, Setting{NumWorkers: 2}, 0, 10*time.Second, inProcessCache)
	tu.tune(context.Background())
	trials := tu.r.Trials
	find := slices.IndexFunc(trials, func(tr Trial) bool { return !tr.Confirm && tr.Setting.NumWorkers == 0 })
	if find < 0 || find+1 >= len(trials) {
		t.Fatalf("no trial of num_workers=0 with one after it: %+v", trials)
	}
	if next := trials[find+1]; !next.Confirm || next.Phase != verdict.PhaseFull {
		t.Errorf("after the find's loader trial: %+v, want a full run confirming it", next)
	}
	if !slices.ContainsFunc(trials[find+1:], func(tr Trial) bool { return !tr.Confirm }) {
		t.Errorf("the search stopped at the find: %+v", trials)
	}
}

// With a budget too small to confirm anything, the search's best find is
// named unconfirmed, with its trial's figure and the command that confirms
// it; the advice never says that no setting beat the script's own.
func TestUnconfirmedFindIsNamed(t *testing.T) {
	const wall = 10 * time.Second
	tu := clockedTuner(t, Setting{NumWorkers: 2}, 2*wall+5*time.Second, wall, inProcessCache)
	tu.tune(context.Background())
	r := tu.r
	u := r.Unconfirmed
	if u == nil || u.Setting.NumWorkers != 0 || u.SamplesPerSec != 48 || math.Abs(u.BaselineSamplesPerSec-3.9) > 1e-9 || r.Winner != nil || r.Advice != "" || r.Plan != nil {
		t.Fatalf("unconfirmed %+v, winner %+v, advice %q; trials %+v", u, r.Winner, r.Advice, r.Trials)
	}
	var out strings.Builder
	r.writeAdvice(&out)
	text := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"advice: num_workers=0: 48.0 samples/s in a loader trial, 12.3x the script's own 3.9", "unconfirmed",
		"pipetop tune --from tune.json --budget", "-- python3 train.py"} {
		if !strings.Contains(text, want) {
			t.Errorf("advice lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(text, "no setting") {
		t.Errorf("advice says no setting beat the script's own:\n%s", out.String())
	}
	if adviceOf(*r) == "" || !strings.Contains(adviceOf(*r), "unconfirmed") {
		t.Errorf("adviceOf: %q", adviceOf(*r))
	}
}

// The budget's plan: no search trial that would leave too little for the
// confirmation once a setting beat the baseline; before that, any trial
// that fits.
func TestSearchLeavesTimeToConfirm(t *testing.T) {
	const wall = 10 * time.Second
	for _, tc := range []struct {
		name          string
		budget, spent time.Duration
		found, over   bool
	}{
		{"room for the trial and the confirmation", 80 * time.Second, 0, true, false},
		{"the trial would eat the confirmation", 65 * time.Second, 0, true, true},
		{"nothing found yet: search while trials fit", 15 * time.Second, 0, false, false},
		{"no time for the trial", 15 * time.Second, 6 * time.Second, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tu := clockedTuner(t, Setting{NumWorkers: 2}, tc.budget, wall, inProcessCache)
			at := tu.start.Add(tc.spent)
			tu.now = func() time.Time { return at }
			if got := tu.over(context.Background(), verdict.PhaseLoader, tc.found); got != tc.over {
				t.Errorf("over %v, want %v (reserve %s)", got, tc.over, tu.reserve())
			}
		})
	}
}

// --from a tune report: its search trials are not run again, and its
// best find is confirmed.
func TestPriorTrialsAreNotRunAgain(t *testing.T) {
	const wall = 10 * time.Second
	tu := clockedTuner(t, Setting{NumWorkers: 2}, 7*wall, wall, inProcessCache)
	tu.c.Prior = []Trial{
		{Setting: Setting{NumWorkers: 2}, Phase: verdict.PhaseLoader, Status: verdict.PhaseOK, SamplesPerSec: 3.9},
		{Setting: Setting{NumWorkers: 0}, Phase: verdict.PhaseLoader, Status: verdict.PhaseOK, SamplesPerSec: 48},
	}
	tu.tune(context.Background())
	r := tu.r
	for _, tr := range r.Trials {
		if !tr.Confirm && !tr.Prior && (tr.Setting.NumWorkers == 0 || tr.Setting == (Setting{NumWorkers: 2})) {
			t.Errorf("a prior trial ran again: %+v", tr)
		}
	}
	if r.Winner == nil || r.Winner.Setting.NumWorkers != 0 {
		t.Errorf("winner %+v; trials %+v", r.Winner, r.Trials)
	}
}
