package tune

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Noise thresholds (docs/tune.md).
const (
	// MinNoise is the smallest relative difference the confirmation
	// takes for a real one, whatever the spread of the runs.
	MinNoise = 0.03
	// MemoryFloor is the share of the memory a trial must leave free.
	MemoryFloor = 0.10
)

// confirm runs the finalists not confirmed yet and the baseline in full
// trials, one of each in turn, as many rounds as the budget leaves (at
// most Rounds; fewer finalists when not even one round of them all fits);
// the runs add to each setting's earlier ones.
func (t *tuner) confirm(ctx context.Context, finalists []Setting) {
	var todo []Setting
	for _, s := range finalists {
		if len(t.runs[s]) == 0 && s != t.r.Baseline {
			todo = append(todo, s)
		}
	}
	rounds := t.rounds(len(todo))
	for rounds < 1 && len(todo) > 1 {
		todo = todo[:len(todo)-1]
		rounds = t.rounds(len(todo))
	}
	if len(todo) == 0 || rounds < 1 {
		if len(todo) > 0 {
			t.r.OutOfBudget = true
			fmt.Fprintf(t.c.Log, "pipetop tune: no time left to confirm %s in full runs\n", todo[0])
		}
		return
	}
	if rounds < t.c.Rounds || len(todo) < len(finalists) {
		t.r.OutOfBudget = true
	}
	all := append([]Setting{t.r.Baseline}, todo...)
	for round := 0; round < rounds && ctx.Err() == nil; round++ {
		for _, s := range all {
			if ctx.Err() != nil {
				break
			}
			t.keep(s, t.trial(ctx, verdict.PhaseFull, s, true))
		}
	}
}

// rounds is how many rounds of n finalists and the baseline the budget
// leaves, at most Rounds.
func (t *tuner) rounds(n int) int {
	if t.c.Budget <= 0 {
		return t.c.Rounds
	}
	left := t.c.Budget - t.now().Sub(t.start)
	per := time.Duration(n+1) * t.cost(verdict.PhaseFull)
	if per <= 0 {
		return t.c.Rounds
	}
	return min(t.c.Rounds, int(left/per))
}

// keep adds a confirmation run of s.
func (t *tuner) keep(s Setting, tr Trial) {
	if _, ok := t.runs[s]; !ok {
		t.order = append(t.order, s)
	}
	t.runs[s] = append(t.runs[s], tr)
}

// candidates are the confirmed settings' figures over their full runs,
// with their search trial's samples/s when the search ran loader trials.
func (t *tuner) candidates(sc scores, searched string) {
	for _, s := range t.order {
		c, ok := candidate(s, t.runs[s])
		if !ok {
			continue
		}
		c.Baseline = s == t.r.Baseline
		if searched == verdict.PhaseLoader {
			c.LoaderSamplesPerSec = sc[s].SamplesPerSec
		}
		t.r.Candidates = append(t.r.Candidates, c)
	}
}

// candidate is s's figures over its measured full trials.
func candidate(s Setting, trials []Trial) (Candidate, bool) {
	var rates []float64
	c := Candidate{Setting: s}
	for _, tr := range trials {
		if tr.SamplesPerSec <= 0 {
			continue
		}
		rates = append(rates, tr.SamplesPerSec)
		c.CPUCores += tr.CPUCores
		c.PeakRSS = max(c.PeakRSS, tr.PeakRSS)
	}
	if len(rates) == 0 {
		return c, false
	}
	sort.Float64s(rates)
	c.Runs, c.Min, c.Max = len(rates), rates[0], rates[len(rates)-1]
	c.Median = median(rates)
	c.CPUCores /= float64(len(rates))
	return c, true
}

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// advise picks the winner — the cheapest candidate within the noise of
// the fastest — and writes the change and the plan when it is not the
// script's own setting; the best setting of the search, when no full run
// confirmed it, is named as unconfirmed.
func (t *tuner) advise(sc scores, searched string) {
	t.unconfirmed(sc, searched)
	w, base := winner(t.r.Candidates)
	if w == nil {
		return
	}
	t.r.Winner = w
	if base != nil && base.Median > 0 {
		t.r.SpeedUp = w.Median / base.Median
	}
	if w.Baseline {
		return
	}
	p := w.Setting.plan(t.r.DataLoader.Site, t.uint8Keys())
	t.r.Plan, t.r.Advice = &p, w.Setting.String()
	t.r.Change = change(t.r.DataLoader, t.r.Baseline, w.Setting, t.uint8Keys())
}

// unconfirmed names the fastest setting of the search that beat the
// baseline when no full run confirmed it, with its trial's figure and the
// command that confirms it.
func (t *tuner) unconfirmed(sc scores, searched string) {
	base := sc[t.r.Baseline].SamplesPerSec
	ranked := sc.ranked()
	if len(ranked) == 0 || base <= 0 {
		return
	}
	best := ranked[0]
	if best == t.r.Baseline || sc[best].SamplesPerSec <= base || len(t.runs[best]) > 0 {
		return
	}
	t.r.Unconfirmed = &Unconfirmed{Setting: best, Phase: searched, SamplesPerSec: sc[best].SamplesPerSec, BaselineSamplesPerSec: base,
		Confirm: t.confirmCommand()}
}

// confirmCommand is the pipetop tune command that confirms the search's
// best: from this report (its bisect and search trials), with a budget
// for the confirmation's full runs and a margin.
func (t *tuner) confirmCommand() string {
	need := 1.5*t.reserve().Minutes() + 1
	out := t.c.Out
	if out == "" {
		out = "tune.json"
	}
	return fmt.Sprintf("pipetop tune --from %s --budget %.0fm -- %s", out, math.Ceil(need), strings.Join(t.c.Bisect.Argv, " "))
}

// winner is the cheapest candidate whose median is within the noise of
// the fastest's (the larger of half its spread and MinNoise), and the
// baseline.
func winner(cs []Candidate) (win, base *Candidate) {
	var fast *Candidate
	for i := range cs {
		c := &cs[i]
		if c.Baseline {
			base = c
		}
		if fast == nil || c.Median > fast.Median {
			fast = c
		}
	}
	if fast == nil {
		return nil, base
	}
	noise := max((fast.Max-fast.Min)/2, MinNoise*fast.Median)
	for i := range cs {
		c := &cs[i]
		if c.Median >= fast.Median-noise && (win == nil || c.Setting.cost() < win.Setting.cost()) {
			win = c
		}
	}
	return win, base
}

// change is the edit that makes the script use s instead of base: the
// DataLoader call's arguments at its site, and the thread lines with
// where they go.
func change(d *verdict.DataLoaderCall, base, s Setting, keys []Uint8Key) []string {
	var args []string
	if s.NumWorkers != base.NumWorkers {
		args = append(args, fmt.Sprintf("num_workers=%d", s.NumWorkers))
	}
	if s.PrefetchFactor != base.PrefetchFactor && s.PrefetchFactor > 0 {
		args = append(args, fmt.Sprintf("prefetch_factor=%d", s.PrefetchFactor))
	}
	if s.PersistentWorkers != base.PersistentWorkers {
		args = append(args, fmt.Sprintf("persistent_workers=%s", pyBool(s.PersistentWorkers)))
	}
	var out []string
	if len(args) > 0 {
		out = append(out, fmt.Sprintf("%s: DataLoader(..., %s)", d.Site, strings.Join(args, ", ")))
	}
	if s.WorkerThreads > 0 {
		out = append(out, fmt.Sprintf("%s: DataLoader(..., worker_init_fn=lambda _: torch.set_num_threads(%d)) (or call it first in your worker_init_fn)", d.Site, s.WorkerThreads))
	}
	if s.MainThreads > 0 {
		out = append(out, fmt.Sprintf("the top of the script, after `import torch`: torch.set_num_threads(%d)", s.MainThreads))
	}
	if s.VideoThreads > 0 {
		out = append(out, fmt.Sprintf("where the Dataset opens a video (av.open): stream.thread_type = \"AUTO\"; stream.codec_context.thread_count = %d", s.VideoThreads))
	}
	for _, k := range keys {
		if !s.Uint8 {
			break
		}
		out = append(out, uint8Change(k))
	}
	return out
}

// uint8Change is the edit that sends batch key k as uint8 from the workers
// and converts it back in the training step.
func uint8Change(k Uint8Key) string {
	to, back := "x.to(torch.uint8)", "x.float()"
	if k.Scale == 255 {
		to, back = "x.mul(255).round_().to(torch.uint8)", "x.float().div_(255)"
	}
	return fmt.Sprintf("batch%s: return it from the Dataset (or collate_fn) as %s and convert it in the training step with %s", k.Key, to, back)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// memoryGuard refuses a trial that leaves less than MemoryFloor of the
// host's memory, or of limit (bytes, 0: none) to the trainer's tree.
func memoryGuard(limit float64) func(snapshot.Snapshot) string {
	return func(s snapshot.Snapshot) string {
		rss := bisect.TreeRSS(s.Process)
		if limit > 0 && rss > (1-MemoryFloor)*limit {
			return fmt.Sprintf("the run's processes took %.0f MB, more than %.0f %% of the %.0f MB allowed: stopped before the memory ran out",
				rss/1e6, 100*(1-MemoryFloor), limit/1e6)
		}
		total, used := s.CPU.MemTotal.Value, s.CPU.MemUsed.Value
		if total != nil && used != nil && *total > 0 && *used > (1-MemoryFloor)**total {
			return fmt.Sprintf("the host's memory is %.0f %% used (the run's processes %.0f MB): stopped before it ran out",
				100**used / *total, rss/1e6)
		}
		return ""
	}
}
