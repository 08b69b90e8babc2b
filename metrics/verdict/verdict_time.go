package verdict

import (
	"fmt"
	"slices"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of the time rules. docs/verdicts.md documents them.
const (
	StallFactor  = 10    // no step for this many p99 step times ...
	StallMinNs   = 5e9   // ... and at least this long: stalled
	DriftSlower  = 0.25  // steps this much slower than the baseline: drift
	DriftMinGrow = 0.05  // the stage named must have grown by this share of the step
	DriftBaseNs  = 5e9   // a baseline shorter than this is too short to drift from ...
	DriftBaseMin = 20    // ... and so is one of fewer steps
	BaselineNs   = 120e9 // the baseline is at most the run's first two minutes
	BaselineSkip = 5     // steps left out of the baseline (warm-up)
	FoldInFlight = 1.0   // an in-flight step longer than this many mean steps is counted
)

// startRule: no step yet. With a progress sample it says which stage the
// loop has been in and for how long.
func startRule(in *Inputs) (Verdict, bool) {
	if in.Summary.Steps > 0 {
		return Verdict{}, false
	}
	after := ""
	if in.NowNs > 0 && in.StartNs > 0 && in.NowNs > in.StartNs {
		after = " after " + secs(float64(in.NowNs-in.StartNs))
	}
	p := in.Progress
	if !in.Live || p == nil || p.Stage == "" {
		v := Verdict{Kind: WarmingUp, Headline: "warming up: no step yet" + after,
			Next: "wait for the first step; a publisher that sends progress frames also says which stage the loop is in"}
		if p != nil && in.Live {
			v.Kind, v.Next = Starting, "the trainer has not started its first step: it is still setting up (model, dataset, workers)"
			v.Headline = "starting: no step yet" + after + " — the loop has not begun a step"
		}
		return v, true
	}
	if p.Done > 0 {
		return attachedMidStep(in)
	}
	in0 := p.InStageNs(in.NowNs)
	v := Verdict{Kind: Starting, Stage: p.Stage,
		Headline: fmt.Sprintf("starting: no step yet%s — the loop has been in %s for %s", after, p.Stage, secs(float64(in0))),
		Next:     stuckAdvice(p.Stage, in.Loader)}
	if stage.ClassOf(p.Stage) == stage.ClassInput {
		v.Headline += loaderRate(in.Loader, in.StartNs)
	}
	return v, true
}

// stallRule: steps came, then none for StallFactor p99 step times and at
// least StallMinNs. It clears itself when steps resume.
func stallRule(in *Inputs) (Verdict, bool) {
	s := in.Summary
	if !in.Live || in.NowNs == 0 || s.LastEndNs == 0 {
		return Verdict{}, false
	}
	gap := float64(in.NowNs - s.LastEndNs)
	if gap < StallMinNs || gap < StallFactor*s.WallP99 {
		return Verdict{}, false
	}
	v := Verdict{Kind: Stalled,
		Headline: fmt.Sprintf("stalled: no step for %s (p99 step %s) after step %d", secs(gap), units.Dur(s.WallP99), s.LastStep)}
	p := in.Progress
	if p == nil || p.Stage == "" || p.Done < s.LastStep {
		v.Next = "no progress frames say where the loop is: dump the trainer's stacks (py-spy dump --pid PID, or SIGQUIT for Go)"
		return v, true
	}
	v.Stage = p.Stage
	v.Headline += fmt.Sprintf(" — stuck in %s for %s", p.Stage, secs(float64(p.InStageNs(in.NowNs))))
	v.Next = stuckAdvice(p.Stage, in.Loader)
	return v, true
}

// attachedMidStep judges a viewer that has seen no step yet of a trainer
// that has finished some: only the in-flight step's age is known, so it is
// stalled once that step is older than StallMinNs.
func attachedMidStep(in *Inputs) (Verdict, bool) {
	p := in.Progress
	flight := float64(in.NowNs - p.StepStartNs)
	if p.StepStartNs == 0 || flight < StallMinNs {
		return Verdict{Kind: WarmingUp, Stage: p.Stage,
			Headline: fmt.Sprintf("attached after %d steps: no step seen yet; the loop is in %s", p.Done, p.Stage),
			Next:     "wait for the next steps"}, true
	}
	return Verdict{Kind: Stalled, Stage: p.Stage,
		Headline: fmt.Sprintf("stalled: step %d has run for %s (none ended since this viewer attached) — stuck in %s for %s",
			p.Step, secs(flight), p.Stage, secs(float64(p.InStageNs(in.NowNs)))),
		Next: stuckAdvice(p.Stage, in.Loader)}, true
}

// stuckAdvice says what usually holds a loop in a stage for long.
func stuckAdvice(name string, l *stage.LoaderStats) string {
	switch stage.ClassOf(name) {
	case stage.ClassInput:
		if l != nil && l.Errors > 0 {
			return fmt.Sprintf("the loader reported %d errors: a dead worker or unreadable chunk; check the trainer's log", l.Errors)
		}
		return "the loader delivers nothing: " + InputAdvice(l) + "; if its workers are idle, one may have died or the storage blocks"
	case stage.ClassComm:
		return "a collective is waiting: one rank is dead, hung or far behind; look at the other ranks"
	case stage.ClassSync:
		return "the loop waits on the device: a long kernel queue or a hung GPU; check the GPU's activity and the driver log"
	case stage.ClassNetwork:
		return "the network stage has not returned: a very slow first step (compilation, allocation) or a hang; dump the trainer's stacks"
	}
	return fmt.Sprintf("the loop is in %s, outside the timed stages: a checkpoint write, evaluation or a lock; dump the trainer's stacks (py-spy dump --pid PID, or SIGQUIT for Go)", name)
}

// loaderRate describes the loader's decoding so far, for the start rule.
func loaderRate(l *stage.LoaderStats, startNs int64) string {
	if l == nil || l.BytesDecoded == 0 || startNs == 0 || l.TimeNs <= startNs {
		return ""
	}
	rate := float64(l.BytesDecoded) / (float64(l.TimeNs-startNs) / 1e9)
	return fmt.Sprintf("; the loader decodes %s/s at read amplification %.0fx", units.Bytes(rate), l.ReadAmp)
}

// warmRule: too few steps, and too little step time, to judge.
func warmRule(in *Inputs) (Verdict, bool) {
	s := in.Summary
	covered := s.WallMean * float64(s.Steps)
	if p := in.Progress; p != nil && in.NowNs > 0 && p.StepStartNs > 0 && p.Done >= int64(s.Steps) {
		covered += float64(max(0, in.NowNs-p.StepStartNs))
	}
	if (s.Steps >= MinSteps || covered >= MinJudgeNs || in.Complete) && s.WallMean > 0 {
		return Verdict{}, false
	}
	return Verdict{Kind: WarmingUp, Headline: fmt.Sprintf("warming up: %d steps so far (%s of steps)", s.Steps, secs(covered)),
		Next: fmt.Sprintf("wait for %d steps or %s of steps", MinSteps, secs(MinJudgeNs))}, true
}

// foldInFlight counts a long in-flight step into the window's shares: with
// a few slow steps, the step that has not ended yet is most of the truth.
func foldInFlight(s stage.Summary, p *stage.Progress, now int64) stage.Summary {
	if now == 0 || p.StepStartNs == 0 || p.Stage == "" || p.StepStartNs < s.LastEndNs {
		return s
	}
	flight := float64(now - p.StepStartNs)
	if flight <= FoldInFlight*s.WallMean {
		return s
	}
	n := float64(s.Steps)
	total := s.WallMean*n + flight
	out := s
	out.Stages = append([]stage.StageStat(nil), s.Stages...)
	out.WallMean = total / (n + 1)
	for i := range out.Stages {
		st := &out.Stages[i]
		t := st.Mean * n
		if st.Name == p.Stage {
			t += float64(p.InStageNs(now))
		}
		st.Mean, st.Share = t/(n+1), t/total
	}
	return out
}

// WithDrift is v, or the drift of end (the run's last window judged
// against its first minutes, in.Baseline set) when there is one and it
// ranks before v in Kinds, as Judge ranks a live window's findings.
func WithDrift(v Verdict, end Inputs) Verdict {
	if d, ok := driftRule(&end); ok && Precedence(d.Kind) < Precedence(v.Kind) {
		d.Also = slices.DeleteFunc(slices.Clone(v.Also), func(c Cost) bool { return c.Stage != "" && c.Stage == d.Stage })
		if v.Stage != d.Stage && v.Kind != Balanced && !v.Healthy() {
			d.Also = append(d.Also, Cost{Kind: v.Kind, Stage: v.Stage, Text: v.Headline})
		}
		return d
	}
	return v
}

// baselineText names the baseline b: "the run's first 8.0 s", or, for a
// viewer that attached to a run well past its start (late: more steps
// came before the first it saw than the baseline holds), "the first 8.0 s
// seen (from step 5210)".
func baselineText(b *stage.Summary, late bool) string {
	if late {
		return fmt.Sprintf("the first %s seen (from step %d)", secs(float64(b.SpanNs)), b.LastStep-int64(b.Steps)+1)
	}
	return "the run's first " + secs(float64(b.SpanNs))
}

// driftRule: the window's steps are much slower than the run's first
// minutes, and one stage accounts for the growth.
func driftRule(in *Inputs) (Verdict, bool) {
	s, b := in.Summary, in.Baseline
	if b == nil || b.Steps < DriftBaseMin || b.SpanNs < DriftBaseNs || s.Steps < MinSteps || b.WallMean <= 0 || b.LastEndNs >= s.LastEndNs-s.SpanNs {
		return Verdict{}, false
	}
	slower := s.WallMean/b.WallMean - 1
	if slower < DriftSlower {
		return Verdict{}, false
	}
	var grew stage.StageStat
	var by float64
	for _, st := range s.Stages {
		old := 0.0
		if bs := b.Stage(st.Name); bs != nil {
			old = bs.Mean
		}
		if d := st.Mean - old; d > by {
			grew, by = st, d
		}
	}
	if by < DriftMinGrow*s.WallMean || heldFromStart(in, grew.Name) {
		return Verdict{}, false
	}
	was := 0.0
	if bs := b.Stage(grew.Name); bs != nil {
		was = bs.Share
	}
	v := Verdict{Kind: Drift, Stage: grew.Name,
		Headline: fmt.Sprintf("drift: steps are %s slower than in %s (%s → %s): %s grew from %s to %s of each step",
			units.Pct(slower), baselineText(b, in.BaselineFirst > max(BaselineSkip, int64(b.Steps))), units.Dur(b.WallMean), units.Dur(s.WallMean), grew.Name, units.Pct(was), units.Pct(grew.Share))}
	switch stage.ClassOf(grew.Name) {
	case stage.ClassInput:
		v.Next = "the loader slowed down since the start: a decoded-chunk cache that stopped fitting, slower storage, or fewer live workers; " + InputAdvice(in.Loader)
	case stage.ClassNetwork, stage.ClassSync:
		v.Next = fmt.Sprintf("%s got slower: thermal or power throttling, a growing batch or sequence, or memory pressure; check the GPU clocks and throttle reasons", grew.Name)
	default:
		v.Next = fmt.Sprintf("find what grows in %s: a list or log kept across steps, an evaluation or checkpoint that gets longer", grew.Name)
	}
	return v, true
}

// heldFromStart reports whether the baseline already had a bottleneck in
// stage name: the steady rules judge the baseline as they judge a window
// and name that stage with a bad verdict (data_wait at 49 % of each step
// from the first second is input-bound, not drift when it reaches 52 %;
// a moderate share, a warning, can still drift). The window's own verdict
// then names it.
func heldFromStart(in *Inputs, name string) bool {
	v := steady(&Inputs{Summary: *in.Baseline, Loader: in.Loader})
	return v.Stage == name && v.Severity() == SeverityBad
}

// secs writes nanoseconds as seconds or minutes.
func secs(ns float64) string {
	switch {
	case ns >= 120e9:
		return fmt.Sprintf("%.0f min", ns/60e9)
	case ns >= 10e9:
		return fmt.Sprintf("%.0f s", ns/1e9)
	default:
		return fmt.Sprintf("%.1f s", ns/1e9)
	}
}
