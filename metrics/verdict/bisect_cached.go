package verdict

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of pipetop bisect's rules (ratios of samples/s); docs/verdicts.md.
const (
	// InputMost: cached batches this many times faster than the full run
	// (the input is half the step or more) with a loader short of the
	// network: input-bound outright.
	InputMost = 2.0
	// SplitShare: the input costs at least this share of each step (1 -
	// full/cached), but the network's own limit matters too: the verdict
	// splits the step between the two. Below it, single runs of the same
	// loop differ by as much on a loaded 2-core machine.
	SplitShare = 0.3
)

// diagnoseScript compares the phases of pipetop bisect (a script run once
// per phase): a failure every phase would have first, then the phases
// over cached batches, then what the cold phase says of the storage.
func diagnoseScript(phases []PhaseResult, get func(string) *PhaseResult) Verdict {
	if v, ok := failureVerdict(phases); ok {
		return v
	}
	ld, cached := get(PhaseLoader), get(PhaseCached)
	v := diagnoseCached(phases, get(PhaseFull), ld, cached, get(PhaseForward))
	return withCold(v, phases, cached)
}

// diagnoseCached compares the loader alone, the script's loop on its
// cached batches, the forward alone on them, and the script as it is.
func diagnoseCached(phases []PhaseResult, full, ld, cached, fwd *PhaseResult) Verdict {
	if full == nil {
		return incomplete(phases)
	}
	skipped := skipReason(phases)
	if cached == nil {
		return withoutCache(full, fwd, skipped)
	}
	all, net := full.Rate(), cached.Rate()
	inputShare := max(0, 1-all/net)
	if ld != nil {
		load := ld.Rate()
		switch {
		case workers(ld.Loader) && all < TogetherShort*min(load, net) && competes(all, load):
			return cachedContention(full, ld, cached)
		case load < LoaderShort*net && net >= InputMost*all:
			return Verdict{Kind: InputBound, Stage: stage.DataWait,
				Headline: fmt.Sprintf("input-bound: the loader alone delivers %s samples/s; the network takes %s on cached batches; together %s: a loader that kept up would make steps %.1fx faster",
					num(load), num(net), num(all), net/all),
				Next: InputAdvice(ld.Loader)}
		}
	}
	own := phaseVerdict(cached)
	if inputShare >= SplitShare {
		return split(full, ld, cached, own, inputShare)
	}
	v := own
	v.Headline = fmt.Sprintf("%s: cached batches are only %.2fx the full run, so the input is not the problem; on cached batches: %s",
		own.Kind, net/all, own.Headline)
	if fwd != nil && fwd.SamplesPerSec > net {
		v.Headline += fmt.Sprintf("; the forward alone runs %s samples/s (backward and the optimizer take %.0f %% of a cached step)",
			num(fwd.SamplesPerSec), 100*(1-net/fwd.SamplesPerSec))
	}
	return v
}

// workers is whether the loader has workers of its own (or is not
// known not to): only then do the loader and the network run side by
// side and can fight over the cores. A loader on the training thread
// (num_workers=0) adds its time to each step instead: the split rule's
// case.
func workers(l *stage.LoaderStats) bool {
	return l == nil || l.Workers > 0
}

// split: the input costs a share of each step and the network's own limit
// the rest; both are named, the input's fix first.
func split(full, ld, cached *PhaseResult, own Verdict, inputShare float64) Verdict {
	v := Verdict{Kind: InputBound, Stage: stage.DataWait,
		Headline: fmt.Sprintf("input and network: the input costs %.0f %% of each step (cached batches run %.2fx the full pipeline: %s vs %s samples/s); the rest is the network: %s on cached batches (%s)",
			100*inputShare, cached.SamplesPerSec/full.SamplesPerSec, num(cached.SamplesPerSec), num(full.SamplesPerSec), own.Kind, own.Headline)}
	l := full.Loader
	if ld != nil && ld.Loader != nil {
		l = ld.Loader
	}
	v.Next = InputAdvice(l)
	if own.Next != "" {
		v.Next += "; then, for the network: " + own.Next
	}
	return v
}

// cachedContention: the loader alone and the network alone are both fast
// enough, together they are slow; with the threads that waited for a CPU
// and the pools that compete.
func cachedContention(full, ld, cached *PhaseResult) Verdict {
	v := Verdict{Kind: Balanced,
		Headline: fmt.Sprintf("contention: the loader alone delivers %s samples/s and the network takes %s on cached batches, but together they reach %s",
			num(ld.SamplesPerSec), num(cached.SamplesPerSec), num(full.SamplesPerSec)),
		Next: "they compete for the same CPU cores: lower the DataLoader's num_workers or torch.set_num_threads so the pools add up to the cores"}
	if full.Waiting != nil {
		v.Headline += fmt.Sprintf("; %.1f threads waited for a CPU on average", *full.Waiting)
		if p := poolWords(full.Pools); p != "" {
			v.Headline += " (" + p + ")"
		}
	}
	l := ld.Loader
	if l != nil && l.ReadAmp >= HighReadAmp {
		v.Headline += fmt.Sprintf("; the loader decodes %.1fx the bytes it uses (workers busy %s)", l.ReadAmp, units.Pct(l.WorkerBusy))
		v.Next = "first cut the loader's CPU: " + InputAdvice(l) + "; then, if they still compete, lower num_workers or torch.set_num_threads so the pools add up to the cores"
	}
	return v
}

// poolWords names the thread pools that ran or waited, busiest first:
// "worker 1.6 cores + 0.7 waiting, intra-op ...".
func poolWords(ps []PoolLoad) string {
	ps = append([]PoolLoad(nil), ps...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].CPU+ps[i].Wait > ps[j].CPU+ps[j].Wait })
	var out []string
	for _, p := range ps {
		if p.CPU+p.Wait < 0.1 {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s on %.1f cores, %.1f waiting", p.Threads, p.Role, p.CPU, p.Wait))
	}
	return strings.Join(out, ", ")
}

// withoutCache: no cached phase (a script without a DataLoader, or the
// phase was not asked for): the full run's own verdict, with the forward
// alone when it was measured.
func withoutCache(full, fwd *PhaseResult, skipped string) Verdict {
	v := phaseVerdict(full)
	if skipped == "" {
		skipped = "not measured"
	}
	v.Headline += " (no cached phase: " + skipped + ")"
	if fwd != nil && full.Rate() > 0 {
		v.Headline += fmt.Sprintf("; the forward alone runs %s %s, %.1fx the full run", num(fwd.Rate()), fwd.RateUnit(), fwd.Rate()/full.Rate())
	}
	return v
}

// phaseVerdict is the phase's own verdict from the one judge, or Judge of
// its summary when none was kept. A memory creep of a phase other than
// full is bisect's doing (its cache, its replay), not the script's: the
// phase is judged on its steps instead.
func phaseVerdict(p *PhaseResult) Verdict {
	if p.Verdict != nil && (p.Verdict.Kind != MemoryCreep || p.Name == PhaseFull) {
		return *p.Verdict
	}
	return Judge(Inputs{Summary: p.Summary, Loader: p.Loader, Complete: true})
}

// failureVerdict is the verdict of a bisect stopped by a failure that
// every phase would have (PhaseResult.EveryPhase): the script's own error,
// once, instead of a comparison.
func failureVerdict(phases []PhaseResult) (Verdict, bool) {
	for i := len(phases) - 1; i >= 0; i-- {
		p := &phases[i]
		if !p.EveryPhase {
			continue
		}
		var same []string
		for _, q := range phases {
			if q.Status == PhaseFailed && q.Cause == p.Cause {
				same = append(same, q.Name)
			}
		}
		v := Verdict{Kind: ScriptFailed, Headline: "every phase would fail: " + p.Cause,
			Next: "fix the script first: it fails before a step is measured, whatever the phase (its last lines are above); then run the bisect again"}
		if len(same) < len(phases) {
			v.Headline = fmt.Sprintf("the script fails the same way in the %s phases before a step is measured, and would in the phases after: %s",
				strings.Join(same, " and "), p.Cause)
		}
		if p.ExitStatus != nil && *p.ExitStatus != 0 {
			v.Headline += fmt.Sprintf(" (exit status %d)", *p.ExitStatus)
		}
		if strings.HasPrefix(p.Cause, NotConnected) {
			v.Headline = p.Cause
			v.Next = "run a Python command that imports torch and reaches a DataLoader batch or a forward within --start-timeout, with the environment pipetop gives it (PYTHONPATH and PIPETOP_* passed through launchers)"
		}
		return v, true
	}
	return Verdict{}, false
}

// NotConnected begins the cause of a phase that nothing instrumented
// connected from.
const NotConnected = "nothing instrumented connected"

// incomplete is the verdict of a bisect without a measured full phase:
// why it has none.
func incomplete(phases []PhaseResult) Verdict {
	v := Verdict{Kind: WarmingUp, Headline: "bisect incomplete: the full phase was not measured",
		Next: "run the full phase (--phases full,...)"}
	for _, p := range phases {
		if p.Name != PhaseFull || p.Status == "" {
			continue
		}
		v.Headline = "bisect incomplete: the full phase " + p.outcome()
		if p.Cause != "" {
			v.Headline += ": " + p.Cause
		}
		v.Next = "see the full phase's notes and the end of its stderr above"
	}
	return v
}

// skipReason is the first note of the first skipped phase, "" when none
// was skipped.
func skipReason(phases []PhaseResult) string {
	for _, p := range phases {
		if p.Status == PhaseSkipped {
			if len(p.Notes) > 0 {
				return p.Notes[0]
			}
			return p.Name + " skipped"
		}
	}
	return ""
}
