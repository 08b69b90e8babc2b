package tune

import (
	"context"
	"sort"

	"github.com/pipetop/pipetop/metrics/verdict"
)

// Search thresholds (docs/tune.md).
const (
	// Rising: a setting counts as better when it delivers at least this
	// much more than the best so far; doubling the workers stops when it
	// does not.
	Rising = 1.05
	// BusyWorker: workers on a CPU at least this share of the time are
	// CPU-bound: more than CPUBoundWorkers x the cores cannot help them.
	BusyWorker      = 0.5
	CPUBoundWorkers = 2
	// WaitingWorkers bounds the workers of a loader that waits on storage
	// or the network, in cores (at most MaxWorkers).
	WaitingWorkers = 8
	MaxWorkers     = 64
	// Finalists are how many settings besides the baseline the
	// confirmation runs.
	Finalists = 2
	// SearchNoise: a search trial within this share of the fastest may be
	// as fast; the cheapest such setting is a finalist.
	SearchNoise = 0.10
)

// scores are the search's trials by setting (each setting runs once).
type scores map[Setting]Trial

// tune searches what the bisect says matters, confirms the finalists and
// gives the advice.
func (t *tuner) tune(ctx context.Context) {
	sc := scores{}
	phase := verdict.PhaseLoader
	if t.r.Tuned == TunedThreads {
		phase = verdict.PhaseFull
		t.searchThreads(ctx, sc)
	} else {
		t.searchLoader(ctx, sc)
	}
	finalists := sc.best(Finalists, t.r.Baseline)
	t.confirm(ctx, finalists, sc, phase)
	t.advise()
}

// searchLoader tries the DataLoader's settings in loader trials: the
// workers doubling (with torch's threads in each worker, then one; then,
// when the script's workers do not persist, again with persistent
// workers, since a worker start paid every epoch hides what more workers
// deliver), then deeper prefetching and persistent workers on the best so
// far.
func (t *tuner) searchLoader(ctx context.Context, sc scores) {
	base := t.r.Baseline
	sc.measure(t, ctx, verdict.PhaseLoader, base)
	for _, threads := range []int{0, 1} {
		s := base
		s.WorkerThreads = threads
		t.sweepWorkers(ctx, sc, s)
	}
	if !base.PersistentWorkers {
		s := base
		s.WorkerThreads, s.PersistentWorkers = sc.top().WorkerThreads, true
		t.sweepWorkers(ctx, sc, s)
	}
	best := sc.top()
	if best.NumWorkers == 0 {
		return
	}
	if best.PrefetchFactor < 4 {
		s := best
		s.PrefetchFactor = 4
		if sc.measure(t, ctx, verdict.PhaseLoader, s).SamplesPerSec >= Rising*sc[best].SamplesPerSec {
			best = s
		}
	}
	if !best.PersistentWorkers {
		s := best
		s.PersistentWorkers = true
		sc.measure(t, ctx, verdict.PhaseLoader, s)
	}
}

// sweepWorkers tries s with 0, 1, 2, 4, ... workers while the loader
// still delivers more, up to what the workers' CPU allows.
func (t *tuner) sweepWorkers(ctx context.Context, sc scores, s Setting) {
	limit := MaxWorkers
	best := 0.0
	for w := 0; w <= limit && !t.over(ctx); w = next(w) {
		if w == 0 && s.WorkerThreads > 0 {
			continue // no workers: no worker threads to set
		}
		try := s
		try.NumWorkers = w
		if w == 0 {
			try.PrefetchFactor, try.PersistentWorkers = 0, false // torch refuses them without workers
		}
		tr := sc.measure(t, ctx, verdict.PhaseLoader, try)
		rate := tr.SamplesPerSec
		if tr.Status == verdict.PhaseRefused {
			return // more workers take more memory still
		}
		if w > 0 {
			limit = min(limit, workerLimit(tr, w, t.c.Cores))
		}
		if w >= 2 && rate < Rising*best {
			return
		}
		best = max(best, rate)
	}
}

// next is the worker count after w: 0, 1, 2, 4, 8, ...
func next(w int) int {
	if w < 2 {
		return w + 1
	}
	return 2 * w
}

// workerLimit is how many workers are worth trying after a trial with w:
// CPUBoundWorkers x the cores when the workers were on a CPU most of the
// time, WaitingWorkers x when they waited (storage, the network).
func workerLimit(tr Trial, w, cores int) int {
	cores = max(cores, 1)
	if tr.CPUCores/float64(w) >= BusyWorker {
		return CPUBoundWorkers * cores
	}
	return min(MaxWorkers, WaitingWorkers*cores)
}

// searchThreads tries the main process's intra-op threads with the
// workers (as many as the script's, half, and none) in full trials.
func (t *tuner) searchThreads(ctx context.Context, sc scores) {
	base := t.r.Baseline
	sc.measure(t, ctx, verdict.PhaseFull, base)
	cores := max(t.c.Cores, 1)
	threads := uniq([]int{1, max(1, cores/2), cores})
	workers := uniq([]int{base.NumWorkers, base.NumWorkers / 2})
	for _, w := range workers {
		for _, m := range threads {
			if t.over(ctx) {
				return
			}
			s := base
			s.NumWorkers, s.MainThreads = w, m
			if w > 0 {
				s.WorkerThreads = 1
			} else {
				s.PrefetchFactor, s.PersistentWorkers = 0, false
			}
			sc.measure(t, ctx, verdict.PhaseFull, s)
		}
	}
}

// uniq is xs without repeats, in order.
func uniq(xs []int) []int {
	var out []int
	seen := map[int]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// measure runs s, unless it ran already, and returns its trial.
func (sc scores) measure(t *tuner, ctx context.Context, phase string, s Setting) Trial {
	if tr, ok := sc[s]; ok || t.over(ctx) {
		return tr
	}
	tr := t.trial(ctx, phase, s, false)
	sc[s] = tr
	return tr
}

// top is the setting with the most samples/s.
func (sc scores) top() Setting {
	ranked := sc.ranked()
	if len(ranked) == 0 {
		return Setting{}
	}
	return ranked[0]
}

// ranked are the measured settings, most samples/s first (the cheaper
// first on a tie).
func (sc scores) ranked() []Setting {
	out := make([]Setting, 0, len(sc))
	for s, tr := range sc {
		if tr.SamplesPerSec > 0 {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := sc[out[i]].SamplesPerSec, sc[out[j]].SamplesPerSec
		if a != b {
			return a > b
		}
		return out[i].cost() < out[j].cost()
	})
	return out
}

// best returns at most n finalists among the settings that beat base:
// the fastest, the cheapest within SearchNoise of it (a single trial's
// lead that small is noise, and the confirmation then decides), then the
// next fastest.
func (sc scores) best(n int, base Setting) []Setting {
	var beat []Setting
	for _, s := range sc.ranked() {
		if s != base && sc[s].SamplesPerSec > sc[base].SamplesPerSec {
			beat = append(beat, s)
		}
	}
	if len(beat) == 0 || n == 0 {
		return nil
	}
	out := []Setting{beat[0]}
	cheap := beat[0]
	for _, s := range beat[1:] {
		if sc[s].SamplesPerSec >= (1-SearchNoise)*sc[beat[0]].SamplesPerSec && s.cost() < cheap.cost() {
			cheap = s
		}
	}
	if cheap != beat[0] && len(out) < n {
		out = append(out, cheap)
	}
	for _, s := range beat[1:] {
		if len(out) < n && s != cheap {
			out = append(out, s)
		}
	}
	return out
}
