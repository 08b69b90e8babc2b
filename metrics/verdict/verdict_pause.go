package verdict

import (
	"fmt"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of the pause causes. docs/verdicts.md documents them.
const (
	EvalShare        = 0.20  // eval at or above this share of the steps' time: evaluation is named
	WorkerStartMinNs = 100e6 // a start of the loader's workers costing at least this is a cause of pauses
	CheckpointMinB   = 1e6   // bytes written per pause at or above this are named as the checkpoint's size
)

// periodic reports whether p is a pause that recurs every N steps.
func periodic(p *stage.WaitPattern) bool { return p.Bursty() && p.Period > 0 }

// pauseText words a periodic pause with its share of the steps' time: "188
// ms every 25 steps, 29 % of the run's time"; "" when p is not periodic.
func pauseText(p *stage.WaitPattern, s stage.Summary) string {
	if !periodic(p) {
		return ""
	}
	return fmt.Sprintf("%s every %d steps, %s of the run's time", units.Dur(p.EachNs()), p.Period, units.Pct(p.RunShare(s.WallMean)))
}

// epochRestart reports whether a PyTorch DataLoader starts its workers
// afresh every epoch at a cost: workers without persistent_workers, more
// of them started than it has, each start costing WorkerStartMinNs or
// more, and, when a pause's period is known (period > 0), one pass over
// the loader as long as it.
func epochRestart(l *stage.LoaderStats, period int64) bool {
	if l == nil || l.Source != "torch" || l.Workers == 0 || l.PersistentWorkers || l.Length <= 0 ||
		l.WorkerStarts <= l.Workers || l.WorkerStartNs < WorkerStartMinNs {
		return false
	}
	return period == 0 || samePeriod(period, int64(l.Length))
}

// samePeriod reports whether a pause's period matches a length in steps:
// exactly, or within one step for lengths of 10 or more (as
// stage.WaitPattern's period may slip a step).
func samePeriod(period, length int64) bool {
	d := period - length
	if length >= 10 {
		return d >= -1 && d <= 1
	}
	return d == 0
}

// epochText says that the loader's workers restart each epoch, for an
// input-stalls headline.
func epochText(l *stage.LoaderStats) string {
	return fmt.Sprintf("; %d steps is one pass over the DataLoader (len %d): it starts %d new workers every epoch (persistent_workers=False; %d worker processes started so far), %s to the first batch",
		l.Length, l.Length, l.Workers, l.WorkerStarts, units.Dur(float64(l.WorkerStartNs)))
}

// epochStart reports whether a pause recurs with each pass over a PyTorch
// DataLoader whose workers persist: they prefetch nothing across the
// epoch's end (the next epoch's indices are handed out only when its
// iterator starts), so each epoch's first batch waits for a whole fetch.
func epochStart(l *stage.LoaderStats, period int64) bool {
	return l != nil && l.Source == "torch" && l.Workers > 0 && l.PersistentWorkers && l.Length > 0 &&
		period > 0 && samePeriod(period, int64(l.Length))
}

// epochStartText says that the pause is each epoch's first fetch, for an
// input-stalls headline.
func epochStartText(l *stage.LoaderStats) string {
	return fmt.Sprintf("; %d steps is one pass over the DataLoader (len %d): its persistent workers prefetch nothing across the epoch's end, so each epoch's first batch waits for a whole fetch",
		l.Length, l.Length)
}

// epochStartAdvice is the fix for an epoch's first fetch: let the workers
// prefetch through the boundary, at the DataLoader's creation site; and,
// when the workers cannot keep up anyway (slow, the slow batches'
// advice), that first.
func epochStartAdvice(l *stage.LoaderStats, slow string) string {
	where := ""
	if l.Site != "" {
		where = " in the DataLoader made at " + l.Site
	}
	through := "let the workers prefetch through the epoch's end: a sampler that spans many passes" + where +
		" (DataLoader(..., sampler=RandomSampler(dataset, replacement=True, num_samples=K * len(dataset)))) or an IterableDataset that does not end"
	if slow != "" {
		return slow + "; then " + through
	}
	return through
}

// persistentAdvice is the fix for workers restarted every epoch: the
// exact argument at the DataLoader's creation site.
func persistentAdvice(l *stage.LoaderStats) string {
	where := "in the DataLoader"
	if l.Site != "" {
		where = "in the DataLoader made at " + l.Site
	}
	return fmt.Sprintf("set persistent_workers=True %s (DataLoader(..., persistent_workers=True)): its %d workers then start once, not every epoch at %s each time",
		where, l.Workers, units.Dur(float64(l.WorkerStartNs)))
}

// checkpointCall returns the step of g's hot path that writes a
// checkpoint or another file (torch.save, pickle, numpy's save, a file
// write) and what it is ("a checkpoint", "a file write"); nil when none
// holds HotShare of the group's time.
func checkpointCall(g *stage.CodeGroup) (*stage.PathStep, string) {
	if g == nil {
		return nil, ""
	}
	for i := range g.Path {
		f := &g.Path[i]
		if what := writes(f.Name); f.Lib != "" && f.Share >= stage.HotShare && what != "" {
			return f, what
		}
	}
	return nil, ""
}

// writes says what a library function writes, from its name: a save or
// dump and their variants (torch `save`, `_save`, pickle `dump`,
// safetensors `save_file`, numpy `savez`) is a checkpoint, a write a file
// write; "" for any other name.
func writes(name string) string {
	name = strings.TrimLeft(strings.ToLower(name[strings.LastIndex(name, ".")+1:]), "_")
	switch {
	case strings.HasPrefix(name, "save"), strings.HasPrefix(name, "dump"):
		return "a checkpoint"
	case strings.HasPrefix(name, "write"):
		return "a file write"
	}
	return ""
}

// checkpointNext is the advice for a periodic pause under a file write
// (what: "a checkpoint", "a file write"): how much the process writes each
// time (from its write counter, when known) and the fix.
func checkpointNext(what string, call *stage.PathStep, h *stage.HotSpot, p *stage.WaitPattern, s stage.Summary, host *Host) string {
	size := ""
	if rate := host.WriteRate(); rate > 0 && s.WallMean > 0 {
		if b := rate * float64(p.Period) * s.WallMean / 1e9; b >= CheckpointMinB {
			size = fmt.Sprintf(", about %s each time (the process writes %s/s)", units.Bytes(b), units.Bytes(rate))
		}
	}
	fix := "save less often, or in a background thread or process (copy the state_dict to the CPU first)"
	if what != "a checkpoint" {
		fix = "write less often, or in a background thread"
	}
	return fmt.Sprintf("%s: %s writes every %d steps, %s each%s; %s so the training loop does not wait",
		what, funcText(call.CodeFrame)+" called from "+at(h), p.Period, units.Dur(p.EachNs()), size, fix)
}

// evalBound is the verdict for evaluation passes that take EvalShare or
// more of the steps' time.
func evalBound(s stage.Summary, share float64) Verdict {
	v := Verdict{Kind: StageBound, Stage: stage.Eval,
		Headline: fmt.Sprintf("eval-bound: evaluation takes %s of the run's time (%s a step on average)", units.Pct(share), units.Dur(s.Stage(stage.Eval).Mean)),
		Next:     "evaluate less often or on fewer batches; the training loop waits while it runs"}
	if p := s.PauseOf(stage.Eval); periodic(p) {
		v.Headline = fmt.Sprintf("eval-bound: evaluation takes %s every %d steps, %s of the run's time", units.Dur(p.EachNs()), p.Period, units.Pct(p.RunShare(s.WallMean)))
		v.Next = fmt.Sprintf("evaluate less often than every %d steps or on fewer batches; the training loop waits %s each time", p.Period, units.Dur(p.EachNs()))
	}
	return v
}
