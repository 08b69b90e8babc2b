package verdict

import (
	"fmt"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// inputBound is the verdict for a loop that waits on data on every step
// (or on every Nth, when N saturated workers hand over their batches in
// turn), its advice (inputNext) left to the caller.
func inputBound(s stage.Summary, wait float64, g gpuView, l *stage.LoaderStats, code *stage.CodeProfile) Verdict {
	v := Verdict{Kind: InputBound, Stage: stage.DataWait}
	if g.known {
		v.Headline = fmt.Sprintf("input-bound: the GPU idles %s of each step waiting on data_wait (%s of %s)%s",
			units.Pct(1-g.busy), units.Dur(s.Stage(stage.DataWait).Mean), units.Dur(s.WallMean), g.label())
	} else {
		v.Headline = fmt.Sprintf("input-bound: the loop waits on data_wait %s of each step (%s of %s)",
			units.Pct(wait), units.Dur(s.Stage(stage.DataWait).Mean), units.Dur(s.WallMean))
	}
	v.Headline += inTurn(s, l) + inputCode(code, l)
	return v
}

// Saturated reports whether the loader's workers are busy BusyWorkers of
// the time or more: then the loader is slow on average, whatever the
// pattern of the waits (N workers deliver their batches in turn, so a loop
// faster than them waits on every Nth step), and deeper prefetch cannot
// help.
func Saturated(l *stage.LoaderStats) bool {
	return l != nil && l.Workers > 0 && l.WorkerBusy >= BusyWorkers
}

// SlowOnAverage reports whether the loader, measured in the window of s,
// is slow on average: saturated workers, or workers that, kept busy all
// the time, would still deliver fewer batches than the loop takes (below
// KeepUp of the rate its steps allow without data_wait). Its waits may
// then come in bursts, every Nth step when N workers finish in step, but
// deeper prefetch cannot absorb them.
func SlowOnAverage(s stage.Summary, l *stage.LoaderStats) bool {
	if Saturated(l) {
		return true
	}
	if l == nil || l.WorkerBusy <= 0 {
		return false
	}
	rate := l.BatchesPerSec
	if rate == 0 && l.Batch > 0 {
		rate = l.SamplesPerSec / float64(l.Batch)
	}
	wait := s.Stage(stage.DataWait)
	if rate <= 0 || wait == nil || s.WallMean <= wait.Mean {
		return false
	}
	capacity := rate / l.WorkerBusy
	demand := 1e9 / (s.WallMean - wait.Mean)
	return capacity < KeepUp*demand
}

// inTurn says that workers slow on average hand over their batches in
// turn, when the waits come that way.
func inTurn(s stage.Summary, l *stage.LoaderStats) string {
	p := s.Waits
	if !SlowOnAverage(s, l) || !p.Bursty() {
		return ""
	}
	which := fmt.Sprintf("%s of steps wait", units.Pct(p.Spikes))
	if p.Period > 0 {
		which = fmt.Sprintf("every %s step waits", ordinal(p.Period))
	}
	return fmt.Sprintf("; the %d workers, busy %s, hand over their batches in turn (%s): a steadily slow loader, not bursts",
		l.Workers, units.Pct(l.WorkerBusy), which)
}

// inputStalls is the verdict for a loader that keeps up on most steps but
// falls far behind on a few: prefetch depth, not loader speed, is the cure,
// unless the pause recurs with each pass over a DataLoader that restarts
// its workers every epoch.
func inputStalls(s stage.Summary, wait float64, l *stage.LoaderStats, code *stage.CodeProfile) Verdict {
	p := s.Waits
	which := fmt.Sprintf("%s of steps wait", units.Pct(p.Spikes))
	next := "the loader keeps up on average but not in bursts: deepen the prefetch (more loader workers, a larger prefetch queue or prefetch_factor) so a slow batch overlaps the steps before it"
	cause := ""
	if p.Period > 0 {
		which = fmt.Sprintf("every %s step waits", ordinal(p.Period))
		next += fmt.Sprintf("; find what recurs every %d steps (a chunk or shard boundary, a worker restart, a periodic cache flush)", p.Period)
		cause = fmt.Sprintf(", %s of the run's time", units.Pct(p.RunShare(s.WallMean)))
	}
	if epochRestart(l, p.Period) {
		cause += epochText(l)
		next = persistentAdvice(l)
	} else if l != nil && l.ReadAmp >= HighReadAmp {
		next += "; " + InputAdvice(l)
	}
	return Verdict{Kind: InputStalls, Stage: stage.DataWait,
		Headline: fmt.Sprintf("input stalls: %s %s on data_wait (the rest %s)%s; waiting is %s of the time",
			which, units.Dur(p.SpikeNs), units.Dur(p.TypicalNs), cause, units.Pct(wait)) + inputCode(code, l),
		Next: next}
}

// moderateInput is the tier below input-bound: data_wait is a visible but
// not a dominant part of each step. It says what a loader that kept up
// would gain.
func moderateInput(s stage.Summary, wait float64, l *stage.LoaderStats, code *stage.CodeProfile) Verdict {
	mean := s.Stage(stage.DataWait).Mean
	faster := s.WallMean - mean
	gain := s.WallMean / max(faster, 1)
	return Verdict{Kind: ModerateInput, Stage: stage.DataWait,
		Headline: fmt.Sprintf("moderately input-bound: data_wait takes %s of each step (%s of %s)", units.Pct(wait), units.Dur(mean), units.Dur(s.WallMean)) +
			inputCode(code, l),
		Next: fmt.Sprintf("a loader that kept up would make steps %.2fx faster (%s → %s): %s",
			gain, units.Dur(s.WallMean), units.Dur(faster), InputAdvice(l))}
}

// ordinal writes n as "2nd", "20th", "21st".
func ordinal(n int64) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
