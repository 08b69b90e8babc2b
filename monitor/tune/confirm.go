package tune

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// confirm runs the finalists and the baseline in full trials, one of each
// in turn, Rounds times, and keeps their medians and spreads.
func (t *tuner) confirm(ctx context.Context, finalists []Setting, sc scores, searched string) {
	if len(finalists) == 0 {
		return
	}
	all := append([]Setting{t.r.Baseline}, finalists...)
	runs := make([][]Trial, len(all))
	for round := 0; round < t.c.Rounds && !t.over(ctx); round++ {
		for i, s := range all {
			if t.over(ctx) {
				break
			}
			runs[i] = append(runs[i], t.trial(ctx, verdict.PhaseFull, s, true))
		}
	}
	for i, s := range all {
		c, ok := candidate(s, runs[i])
		if !ok {
			continue
		}
		c.Baseline = i == 0
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
// script's own setting.
func (t *tuner) advise() {
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
	p := w.Setting.plan(t.r.DataLoader.Site)
	t.r.Plan, t.r.Advice = &p, w.Setting.String()
	t.r.Change = change(t.r.DataLoader, t.r.Baseline, w.Setting)
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
func change(d *verdict.DataLoaderCall, base, s Setting) []string {
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
	return out
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
