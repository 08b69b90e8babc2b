package verdict

import (
	"fmt"
	"slices"

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
	v.Headline += inTurnText(s, l) + inputCode(code, l)
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

// inTurn reports whether the waits of s come from workers that hand over
// their batches in turn: saturated workers, whatever the pattern, or
// workers slow on average whose waits recur every Nth step, N the workers
// (N batches of a round arrive together), or with no period at all (a
// loaded machine blurs the rounds). Deeper prefetch cannot help them: the
// loader is slow, not bursty. A slow batch that recurs with another period
// is a stall, however slow.
func inTurn(s stage.Summary, l *stage.LoaderStats) bool {
	if Saturated(l) {
		return true
	}
	p := s.Waits
	if l == nil || p == nil || (p.Period > 0 && p.Period != int64(l.Workers)) {
		return false
	}
	capacity, demand, ok := keepUp(s, l)
	return ok && capacity < KeepUp*demand
}

// keepUp is what the loader of s could deliver, its workers kept busy all
// the time, and what the loop would take without waiting (one batch a
// step, its data_wait left out); ok is false when either is unknown. A
// DataLoader hands its indices to the workers in turn and its batches to
// the loop in order, so the busiest worker sets the pace: the capacity is
// the batches/s delivered over that worker's busy share (the mean share
// when each worker's is unknown).
func keepUp(s stage.Summary, l *stage.LoaderStats) (capacity, demand float64, ok bool) {
	if l == nil {
		return 0, 0, false
	}
	busy := l.WorkerBusy
	if len(l.WorkerBusyEach) > 0 {
		busy = slices.Max(l.WorkerBusyEach)
	}
	if busy <= 0 {
		return 0, 0, false
	}
	rate := l.BatchesPerSec
	if rate == 0 && l.Batch > 0 {
		rate = l.SamplesPerSec / float64(l.Batch)
	}
	wait := s.Stage(stage.DataWait)
	if rate <= 0 || wait == nil || s.WallMean <= 0 {
		return 0, 0, false
	}
	// A step that only waits (a loader-alone phase) would take a batch in
	// a hundredth of its time at most.
	rest := max(s.WallMean-wait.Mean, s.WallMean/100)
	return rate / busy, 1e9 / rest, true
}

// inTurnText says that the workers hand over their batches in turn, when
// the waits come that way.
func inTurnText(s stage.Summary, l *stage.LoaderStats) string {
	p := s.Waits
	if !p.Bursty() || !inTurn(s, l) {
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
// unless the pause recurs with each pass over the DataLoader (its workers
// restarted every epoch, or persistent ones that prefetch nothing across
// the epoch's end) or the slow batches cost more than the workers can hide.
func inputStalls(s stage.Summary, wait float64, l *stage.LoaderStats, code *stage.CodeProfile) Verdict {
	p := s.Waits
	which := fmt.Sprintf("%s of steps wait", units.Pct(p.Spikes))
	next := "the loader keeps up on average but not in bursts: deepen the prefetch (more loader workers, a larger prefetch queue or prefetch_factor) so a slow batch overlaps the steps before it"
	cause, guess := "", ""
	if p.Period > 0 {
		which = fmt.Sprintf("every %s step waits", ordinal(p.Period))
		cause = fmt.Sprintf(", %s of the run's time", units.Pct(p.RunShare(s.WallMean)))
		guess = fmt.Sprintf("find what recurs every %d steps (a chunk or shard boundary, a worker restart, a periodic cache flush)", p.Period)
	}
	if g := slowFetches(code, l); g != nil {
		guess = fmt.Sprintf("make %s cheaper, or do it once per worker (in a worker_init_fn) instead of in the fetch that pays for it", culprit(g.Hot))
	}
	slow := ""
	if capacity, demand, ok := keepUp(s, l); ok && capacity < KeepUp*demand {
		slow = fmt.Sprintf("the slow batches cost more than the workers can hide (kept busy, they would deliver %s batches/s where the loop takes %s): deeper prefetch alone cannot help; make the slow batch cheaper or add workers", units.Rate(capacity), units.Rate(demand))
	}
	switch {
	case epochRestart(l, p.Period):
		cause += epochText(l)
		next = persistentAdvice(l) + dataAdvice(l)
	case epochStart(l, p.Period):
		cause += epochStartText(l)
		next = epochStartAdvice(l, slow) + dataAdvice(l)
	default:
		next = joinAdvice(guess, slow, next) + dataAdvice(l)
	}
	return Verdict{Kind: InputStalls, Stage: stage.DataWait,
		Headline: fmt.Sprintf("input stalls: %s %s on data_wait (the rest %s)%s; waiting is %s of the time",
			which, units.Dur(p.EachNs()), units.Dur(p.TypicalNs), cause, units.Pct(wait)) + stallCode(code, l, p),
		Next: next}
}

// dataAdvice is what the data itself asks for besides a stall's own
// advice: when the loader reads amplified chunks (Zarr, HDF5, video,
// pipetrain's) or an HDF5 file opened before the workers forked, the
// input advice ("; then ..."); "" otherwise.
func dataAdvice(l *stage.LoaderStats) string {
	if l == nil {
		return ""
	}
	_, _, amplified := rechunkFix(l)
	_, forked := hdf5ForkAdvice(l)
	if !amplified && !forked {
		return ""
	}
	return "; then " + InputAdvice(l)
}

// joinAdvice is the advice of a stall of unknown cause: with the guesses
// at what recurs (guess, "" when the stall has no period) and, when the
// workers cannot absorb it (slow), the slow batches' advice instead of
// deeper prefetch (prefetch).
func joinAdvice(guess, slow, prefetch string) string {
	switch {
	case slow != "" && guess != "":
		return guess + ": " + slow
	case slow != "":
		return slow
	case guess != "":
		return prefetch + "; " + guess
	}
	return prefetch
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
