package tune

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
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
	// BigFind: a loader trial at least this many times the baseline's is
	// confirmed at once, before the search goes on: the budget never
	// leaves such a find unconfirmed for the sake of a longer search.
	BigFind = 2.0
)

// scores are the search's trials by setting (each setting runs once).
type scores map[Setting]Trial

// tune searches what the bisect says matters, confirms the finalists and
// gives the advice.
func (t *tuner) tune(ctx context.Context) {
	phase := verdict.PhaseLoader
	if t.r.Tuned == TunedThreads {
		phase = verdict.PhaseFull
	}
	sc := t.prior(phase)
	if phase == verdict.PhaseFull {
		t.searchThreads(ctx, sc)
	} else {
		t.searchLoader(ctx, sc)
	}
	t.confirm(ctx, sc.best(Finalists, t.r.Baseline))
	t.candidates(sc, phase)
	t.advise(sc, phase)
}

// prior are the scores of the earlier tune's search trials of phase
// (Config.Prior), kept in the report as such.
func (t *tuner) prior(phase string) scores {
	sc := scores{}
	for _, tr := range t.c.Prior {
		if tr.Confirm || tr.Phase != phase || tr.SamplesPerSec <= 0 {
			continue
		}
		if _, ok := sc[tr.Setting]; !ok {
			tr.Prior = true
			sc[tr.Setting] = tr
			t.r.Trials = append(t.r.Trials, tr)
		}
	}
	return sc
}

// searchLoader tries the DataLoader's settings in loader trials: the
// workers doubling (with torch's threads in each worker, then one; then,
// when the script's workers do not persist, again with persistent
// workers, since a worker start paid every epoch hides what more workers
// deliver), then deeper prefetching and persistent workers on the best so
// far, then what the data allows (searchDecode).
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
	if best := sc.top(); best.NumWorkers > 0 {
		t.searchWorkers(ctx, sc, best)
	}
	t.searchDecode(ctx, sc, sc.top())
}

// searchWorkers tries deeper prefetching and persistent workers on best,
// a setting with workers.
func (t *tuner) searchWorkers(ctx context.Context, sc scores, best Setting) {
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

// searchDecode tries, on the best setting so far, what the loader phase
// says its data allows: the video streams' decoder threads against the
// cores (one each, and the cores shared out among the workers), and the
// float images sent as uint8 (converted back in the training step: the
// confirmation's full runs measure that too).
func (t *tuner) searchDecode(ctx context.Context, sc scores, best Setting) {
	if t.videoRead() {
		per := max(1, max(t.c.Cores, 1)/max(best.NumWorkers, 1))
		for _, n := range uniq([]int{1, per}) {
			s := best
			s.VideoThreads = n
			sc.measure(t, ctx, verdict.PhaseLoader, s)
		}
		best = sc.top()
	}
	if len(t.uint8Keys()) > 0 && best.NumWorkers > 0 {
		s := best
		s.Uint8 = true
		sc.measure(t, ctx, verdict.PhaseLoader, s)
	}
}

// floatTypes are the dtypes a uint8 key is turned back into.
var floatTypes = []string{"float16", "bfloat16", "float32", "float64"}

// loaderStats are the bisect's loader phase's statistics, nil without.
func (t *tuner) loaderStats() *stage.LoaderStats {
	for _, p := range t.r.Bisect.Phases {
		if p.Name == verdict.PhaseLoader && p.Loader != nil {
			return p.Loader
		}
	}
	return nil
}

// videoRead is whether the loader phase decoded video streams (PyAV).
func (t *tuner) videoRead() bool {
	l := t.loaderStats()
	return l != nil && len(l.Video) > 0
}

// uint8Keys are the batch's float images that uint8 holds exactly, from
// the loader phase's batch trip; nil when none.
func (t *tuner) uint8Keys() []Uint8Key {
	l := t.loaderStats()
	if l == nil || l.Trip == nil {
		return nil
	}
	var out []Uint8Key
	for _, x := range l.Trip.Uint8() {
		if !strings.HasSuffix(x.Key, "[*]") && (x.Uint8Scale == 1 || x.Uint8Scale == 255) && slices.Contains(floatTypes, x.DType) {
			out = append(out, Uint8Key{Key: x.Key, Scale: x.Uint8Scale, DType: x.DType})
		}
	}
	return out
}

// sweepWorkers tries s with 0, 1, 2, 4, ... workers while the loader
// still delivers more, up to what the workers' CPU allows.
func (t *tuner) sweepWorkers(ctx context.Context, sc scores, s Setting) {
	limit := MaxWorkers
	best := 0.0
	for w := 0; w <= limit && !t.over(ctx, verdict.PhaseLoader, sc.found(t.r.Baseline)); w = next(w) {
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
			limit = min(limit, t.workerLimit(tr, w))
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
// WaitingWorkers x the cores when the bisect's cold phase says the
// storage holds the loader back, or when the workers waited rather than
// ran (storage, the network); when they were on a CPU most of the time,
// the cores if the cold phase says the storage does not hold the loader
// back (more workers only queue for the cores), else CPUBoundWorkers x.
func (t *tuner) workerLimit(tr Trial, w int) int {
	cores := max(t.c.Cores, 1)
	cold, ok := verdict.ColdFinding(t.r.Bisect.Phases)
	switch {
	case ok && cold.Storage, tr.CPUCores/float64(w) < BusyWorker:
		return min(MaxWorkers, WaitingWorkers*cores)
	case ok:
		return cores
	}
	return CPUBoundWorkers * cores
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
			if t.over(ctx, verdict.PhaseFull, sc.found(base)) {
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

// measure runs s, unless it ran already or the budget leaves no time for
// it besides the confirmation, and returns its trial.
func (sc scores) measure(t *tuner, ctx context.Context, phase string, s Setting) Trial {
	if tr, ok := sc[s]; ok || t.over(ctx, phase, sc.found(t.r.Baseline)) {
		return tr
	}
	tr := t.trial(ctx, phase, s, false)
	sc[s] = tr
	if sc.big(phase, s, t.r.Baseline) {
		fmt.Fprintf(t.c.Log, "pipetop tune: %s delivers %.1fx the script's own in a loader trial: confirmed now\n", s, tr.SamplesPerSec/sc[t.r.Baseline].SamplesPerSec)
		t.confirm(ctx, []Setting{s})
	}
	return tr
}

// found is whether a setting beat base in the search.
func (sc scores) found(base Setting) bool {
	b := sc[base].SamplesPerSec
	for s, tr := range sc {
		if s != base && b > 0 && tr.SamplesPerSec > b {
			return true
		}
	}
	return false
}

// big is whether s, just measured, is a loader trial at least BigFind x
// the baseline's and the fastest so far.
func (sc scores) big(phase string, s, base Setting) bool {
	b := sc[base].SamplesPerSec
	return phase == verdict.PhaseLoader && s != base && b > 0 && sc[s].SamplesPerSec >= BigFind*b && sc.top() == s
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
