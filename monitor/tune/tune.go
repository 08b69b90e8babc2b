// Package tune is pipetop tune: a bisect of an unmodified PyTorch script,
// then, for what the bisect says matters, its training DataLoader's
// settings and the intra-op threads tried one trial at a time (each a
// run of the script with a plan the instrumentation applies), the best
// confirmed in full runs that alternate with the script's own settings,
// and the cheapest setting within the noise of the fastest advised, with
// the exact change to make.
package tune

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/tunefile"
)

// Schema tags a tune report (pipetop tune --json, docs/tune.md); its home
// is tunefile, which the monitor reads the measured advice with.
const Schema = tunefile.Schema

// What tune tunes, from the bisect's verdict.
const (
	TunedLoader  = tunefile.TunedLoader // the training DataLoader's settings, in loader trials
	TunedThreads = "threads"            // intra-op threads and workers, in full trials
)

// Config is what Run tunes and how.
type Config struct {
	// Bisect runs the script's phases and trials: its command,
	// environment, measured seconds (a trial's), sources and outputs.
	Bisect bisect.Config
	// From is a bisect already made of the script (--from); nil: Run
	// makes one.
	From *bisect.Report
	// Budget bounds the whole tune; the best so far is advised when it
	// runs out.
	Budget time.Duration
	// Rounds is how many full trials of each finalist (and of the
	// baseline) the confirmation alternates.
	Rounds int
	// Cores is how many cores the run may use (the search's bound).
	Cores int
	// MemoryLimit is the memory a trial may fill (bytes; 0: the host's);
	// a trial that leaves less than MemoryFloor of it is refused.
	MemoryLimit float64
	// Prior are the search trials of an earlier tune of the script
	// (--from its report): the search does not run them again.
	Prior []Trial
	// Out is where the report is written, for the advice on confirming a
	// setting the budget left unconfirmed.
	Out string
	// Log gets the progress.
	Log io.Writer
}

// Trial is one measured run of a setting.
type Trial struct {
	Setting       Setting  `json:"setting"`
	Phase         string   `json:"phase"` // loader or full
	Status        string   `json:"status"`
	SamplesPerSec float64  `json:"samples_per_sec"`
	CPUCores      float64  `json:"cpu_cores"`
	PeakRSS       int64    `json:"peak_rss_bytes"`
	Notes         []string `json:"notes,omitempty"`
	// Confirm is set on the confirmation's full trials.
	Confirm bool `json:"confirm,omitempty"`
	// Prior is set on a trial an earlier tune measured (--from).
	Prior bool `json:"prior,omitempty"`
	// WallSeconds is how long the trial took, start-up included.
	WallSeconds float64 `json:"wall_seconds,omitempty"`
}

// Unconfirmed is the best setting of the search when the budget left no
// time to confirm it in full runs: its trial's figure beside the
// baseline's, and how to confirm it.
type Unconfirmed struct {
	Setting               Setting `json:"setting"`
	Phase                 string  `json:"phase"`
	SamplesPerSec         float64 `json:"samples_per_sec"`
	BaselineSamplesPerSec float64 `json:"baseline_samples_per_sec"`
	// Confirm is the command that confirms it.
	Confirm string `json:"confirm"`
}

// Candidate is a setting the confirmation ran in full trials: the median
// samples/s and its spread, and what it took.
type Candidate struct {
	Setting Setting `json:"setting"`
	// LoaderSamplesPerSec is its loader trial's, 0 when it had none.
	LoaderSamplesPerSec float64 `json:"loader_samples_per_sec,omitempty"`
	Median              float64 `json:"median_samples_per_sec"`
	Min                 float64 `json:"min_samples_per_sec"`
	Max                 float64 `json:"max_samples_per_sec"`
	Runs                int     `json:"runs"`
	CPUCores            float64 `json:"cpu_cores"`
	PeakRSS             int64   `json:"peak_rss_bytes"`
	Baseline            bool    `json:"baseline,omitempty"`
}

// Report is the outcome of a tune. Its JSON is pipetop tune --json and
// what pipetop run --apply reads.
type Report struct {
	Schema  string        `json:"schema"`
	Command []string      `json:"command"`
	Host    string        `json:"host"`
	Started time.Time     `json:"started"`
	Bisect  bisect.Report `json:"bisect"`
	// Tuned is TunedLoader, TunedThreads or "" (nothing in the pipeline
	// helps), and Reason why.
	Tuned  string `json:"tuned"`
	Reason string `json:"reason"`
	// DataLoader is the training DataLoader's call as the script makes it.
	DataLoader *verdict.DataLoaderCall `json:"dataloader,omitempty"`
	Baseline   Setting                 `json:"baseline"`
	Trials     []Trial                 `json:"trials"`
	Candidates []Candidate             `json:"candidates"`
	// Winner is the cheapest candidate within the noise of the fastest;
	// SpeedUp its median over the baseline's. Nil when none beat the
	// baseline beyond the noise.
	Winner  *Candidate `json:"winner,omitempty"`
	SpeedUp float64    `json:"speed_up,omitempty"`
	// Advice is the winner's setting in words ("" when the script's own
	// won): what the live verdict of the script cites.
	Advice string `json:"advice,omitempty"`
	// Change is the edit to make in the script, line by line; Plan the
	// winner's settings for pipetop run --apply.
	Change []string `json:"change,omitempty"`
	Plan   *Plan    `json:"plan,omitempty"`
	// Unconfirmed is the best setting of the search when the budget left
	// no time to confirm it: never advised as measured, never hidden.
	Unconfirmed *Unconfirmed `json:"unconfirmed,omitempty"`
	// Failed says the script fails whatever is tried (the bisect stopped
	// on a failure every phase would have): Reason says how; nothing is
	// advised.
	Failed bool `json:"failed,omitempty"`
	// OutOfBudget and Interrupted say the tune stopped early: the best so
	// far is advised.
	OutOfBudget bool `json:"out_of_budget,omitempty"`
	Interrupted bool `json:"interrupted,omitempty"`
}

// tuner is one tune while it runs.
type tuner struct {
	c     Config
	r     *Report
	start time.Time
	n     int // trials run, for their labels
	// run runs one trial: bisect.RunTrial with the script's config.
	run func(context.Context, bisect.Trial) verdict.PhaseResult
	// now is the clock the budget is read on (time.Now).
	now func() time.Time
	// walls are the trials' wall times by phase, for the budget's plan.
	walls map[string][]float64
	// runs are the confirmation's full trials by setting, in order.
	runs  map[Setting][]Trial
	order []Setting
}

// Run tunes c's script: a bisect (or c.From), the search the verdict
// calls for, the confirmation and the advice.
func Run(ctx context.Context, c Config) (Report, error) {
	if err := c.Bisect.Prepare(); err != nil {
		return Report{}, err
	}
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	host, _ := os.Hostname()
	r := &Report{Schema: Schema, Command: c.Bisect.Argv, Host: host, Started: time.Now().UTC()}
	t := newTuner(c, r, func(ctx context.Context, tr bisect.Trial) verdict.PhaseResult {
		return bisect.RunTrial(ctx, c.Bisect, tr)
	})
	if err := t.bisect(ctx); err != nil {
		return *r, err
	}
	if r.Tuned != "" {
		t.cold(ctx)
		t.tune(ctx)
	}
	r.Interrupted = ctx.Err() != nil
	return *r, nil
}

// newTuner is a tuner of c writing r, its trials run by run.
func newTuner(c Config, r *Report, run func(context.Context, bisect.Trial) verdict.PhaseResult) *tuner {
	return &tuner{c: c, r: r, start: time.Now(), now: time.Now, run: run, walls: map[string][]float64{}, runs: map[Setting][]Trial{}}
}

// bisect makes (or takes) the bisect and decides what to tune.
func (t *tuner) bisect(ctx context.Context) error {
	if t.c.From != nil {
		t.r.Bisect = *t.c.From
	} else {
		c := t.c.Bisect
		c.Phases = []string{verdict.PhaseLoader, verdict.PhaseCached, verdict.PhaseFull}
		rep, err := bisect.Run(ctx, c)
		if err != nil {
			return err
		}
		t.r.Bisect = rep
		if ctx.Err() != nil {
			// A bisect cut short judges too few steps (warming-up): its
			// verdict is not the script's.
			t.r.Reason = "interrupted during the bisect: nothing was tried"
			fmt.Fprintf(t.c.Log, "pipetop tune: %s\n", t.r.Reason)
			return nil
		}
	}
	if v := t.r.Bisect.Verdict; v.Kind == verdict.ScriptFailed {
		t.r.Failed, t.r.Reason = true, "the script fails whatever is tried: "+v.Headline
		fmt.Fprintf(t.c.Log, "pipetop tune: %s\n", t.r.Reason)
		return nil
	}
	t.r.Tuned, t.r.Reason = decide(t.r.Bisect.Verdict)
	t.r.DataLoader = dataLoaderOf(t.r.Bisect)
	if t.r.Tuned != "" && t.r.DataLoader == nil {
		t.r.Tuned, t.r.Reason = "", "the bisect did not see where the script makes its training DataLoader, so no setting can be applied to it"
	}
	if t.r.DataLoader != nil {
		t.r.Baseline = baseline(t.r.DataLoader)
	}
	fmt.Fprintf(t.c.Log, "pipetop tune: %s\n", t.r.Reason)
	return nil
}

// decide is what the bisect's verdict says to tune, and why.
func decide(v verdict.Verdict) (tuned, reason string) {
	switch v.Kind {
	case verdict.InputBound, verdict.InputStalls, verdict.ModerateInput, verdict.StorageBound:
		return TunedLoader, "the input holds the steps back (" + string(v.Kind) + "): the training DataLoader's settings are tried in loader trials"
	case verdict.Balanced, verdict.Oversubscribed, verdict.TrainingThreadBound, verdict.Throttled, verdict.Contention:
		return TunedThreads, "the loader and the network compete for the cores (" + string(v.Kind) + "): threads and workers are tried in full trials"
	}
	return "", "the bisect says " + string(v.Kind) + ": nothing in the input pipeline helps, so nothing is tried"
}

// dataLoaderOf is the training DataLoader's call as a bisect's phases saw
// it (the full phase's first).
func dataLoaderOf(r bisect.Report) *verdict.DataLoaderCall {
	for _, name := range []string{verdict.PhaseFull, verdict.PhaseLoader, verdict.PhaseCached} {
		for _, p := range r.Phases {
			if p.Name == name && p.DataLoader != nil {
				return p.DataLoader
			}
		}
	}
	return nil
}

// cold runs the bisect's cold phase when the loader is tuned and the
// bisect has none (its own bisect, whose loader phase recorded the files
// to evict): whether the storage holds the loader back decides how many
// workers the search tries.
func (t *tuner) cold(ctx context.Context) {
	b := &t.r.Bisect
	if t.r.Tuned != TunedLoader || t.c.From != nil || ctx.Err() != nil || !t.fits(2*t.cost(verdict.PhaseLoader)+t.reserve()) {
		return
	}
	for _, p := range b.Phases {
		if p.Name == verdict.PhaseCold {
			return
		}
	}
	fmt.Fprintf(t.c.Log, "pipetop tune: the loader alone from a cold page cache: storage-bound or not\n")
	p := t.run(ctx, bisect.Trial{Phase: verdict.PhaseCold})
	b.Phases = append(b.Phases, p)
	b.Verdict = verdict.DiagnoseBisect(b.Phases)
	if c, ok := verdict.ColdFinding(b.Phases); ok {
		fmt.Fprintf(t.c.Log, "pipetop tune: %s\n", c.Words())
	}
}

// over is whether the search must stop before a trial of phase: ctx
// ended, the trial does not fit in the budget, or it fits but would leave
// no time to confirm a find (found: one beat the script's own already)
// against the baseline in Rounds rounds. With nothing found yet the
// search goes on while trials fit: a find named unconfirmed is better
// than none.
func (t *tuner) over(ctx context.Context, phase string, found bool) bool {
	switch {
	case ctx.Err() != nil:
		return true
	case !t.fits(t.cost(phase)), found && !t.fits(t.cost(phase)+t.reserve()):
		t.r.OutOfBudget = true
		return true
	}
	return false
}

// fits is whether d is left of the budget (any d without one).
func (t *tuner) fits(d time.Duration) bool {
	return t.c.Budget <= 0 || t.now().Sub(t.start)+d <= t.c.Budget
}

// cost is what one trial of phase takes, start-up included: the mean of
// the trials of that phase so far, else the bisect's phase of that name,
// else the measured time with a warm-up and a start-up.
func (t *tuner) cost(phase string) time.Duration {
	if w := t.walls[phase]; len(w) > 0 {
		sum := 0.0
		for _, x := range w {
			sum += x
		}
		return time.Duration(sum / float64(len(w)) * float64(time.Second))
	}
	for _, p := range t.r.Bisect.Phases {
		if p.Name == phase && p.WallSeconds > 0 {
			return time.Duration(p.WallSeconds * float64(time.Second))
		}
	}
	b := t.c.Bisect
	return b.PhaseTime + b.WarmupTime + 10*time.Second
}

// reserve is what confirming one setting against the baseline takes: a
// full trial of each, Rounds times.
func (t *tuner) reserve() time.Duration {
	return time.Duration(2*t.c.Rounds) * t.cost(verdict.PhaseFull)
}

// trial runs setting s as phase and records it.
func (t *tuner) trial(ctx context.Context, phase string, s Setting, confirm bool) Trial {
	t.n++
	label := fmt.Sprintf("trial-%d", t.n)
	tr := Trial{Setting: s, Phase: phase, Confirm: confirm}
	if why := s.valid(); why != "" {
		tr.Status, tr.Notes = verdict.PhaseSkipped, []string{why}
		t.r.Trials = append(t.r.Trials, tr)
		return tr
	}
	env, out, err := WritePlan(s.plan(t.r.DataLoader.Site, t.uint8Keys()), t.c.Bisect.Dir, label+".plan.json")
	if err != nil {
		tr.Status, tr.Notes = verdict.PhaseFailed, []string{err.Error()}
		t.r.Trials = append(t.r.Trials, tr)
		return tr
	}
	env = append(env, "PIPETOP_BISECT_LABEL="+label+": "+s.String())
	fmt.Fprintf(t.c.Log, "pipetop tune: %s, %s trial: %s\n", label, phase, s)
	p := t.run(ctx, bisect.Trial{Phase: phase, Label: label, Env: env, Guard: memoryGuard(t.c.MemoryLimit)})
	tr.Status, tr.SamplesPerSec, tr.CPUCores, tr.PeakRSS, tr.Notes = p.Status, p.SamplesPerSec, p.CPUCores, p.PeakRSS, p.Notes
	if tr.WallSeconds = p.WallSeconds; p.WallSeconds > 0 && ctx.Err() == nil {
		t.walls[phase] = append(t.walls[phase], p.WallSeconds)
	}
	planned(&tr, out)
	if !p.Measured() || tr.Status == verdict.PhaseFailed {
		tr.SamplesPerSec = 0
	}
	fmt.Fprintf(t.c.Log, "pipetop tune: %s: %s, %.1f samples/s\n", label, tr.Status, tr.SamplesPerSec)
	t.r.Trials = append(t.r.Trials, tr)
	return tr
}

// planned adds to a measured trial what the script reported of its plan:
// its notes, and a failure when the plan reached no DataLoader (the trial
// then measured the script's own settings under another name).
func planned(tr *Trial, out string) {
	reports, err := ReadPlanReports(out)
	sites, notes := PlanOutcome(reports)
	tr.Notes = append(tr.Notes, notes...)
	switch {
	case tr.Status != verdict.PhaseOK && tr.Status != verdict.PhaseShort:
	case err != nil:
		tr.Status, tr.Notes = verdict.PhaseFailed, append(tr.Notes, err.Error())
	case len(sites) == 0:
		tr.Status, tr.Notes = verdict.PhaseFailed, append(tr.Notes, "the plan reached no DataLoader: the trial ran the script's own settings")
	}
}
