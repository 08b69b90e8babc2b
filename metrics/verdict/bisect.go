package verdict

import (
	"fmt"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Bisect phase names. pipetrain bisect runs forward, train-fixed, loader,
// synthetic and full; pipetop bisect runs loader, cold, cached, forward
// and full (its forward is the network's forward on cached batches).
const (
	PhaseForward    = "forward"     // network forward alone, on fixed or cached batches
	PhaseTrainFixed = "train-fixed" // forward + backward + optimizer on one fixed batch
	PhaseLoader     = "loader"      // the loader alone over the real dataset
	PhaseSynthetic  = "synthetic"   // the full loop on in-memory synthetic batches
	PhaseCached     = "cached"      // the script's loop on its own first batches, replayed from memory
	PhaseFull       = "full"        // the full pipeline
	PhaseCold       = "cold"        // the loader alone, its files evicted from the page cache first
)

// Thresholds of the bisect rules (ratios of samples/s); docs/verdicts.md.
const (
	LoaderShort   = 0.8 // loader alone below this fraction of the network: input-bound
	UploadShort   = 0.8 // synthetic below this fraction of train-fixed: upload-bound
	TogetherShort = 0.7 // full below this fraction of both halves alone: contention
	LoaderMargin  = 1.5 // a loader under this multiple of the network with high read amplification: input-bound
	UploadShare   = 0.1 // ...and h2d at least this share of the synthetic step
	// LoaderIdle: a loader needed for less than this share of what it
	// delivers alone sits idle most of each step; it cannot take the cores
	// that a contention verdict blames it for.
	LoaderIdle = 0.1
	// StragglerShare: a rank below this share of the fastest rank's
	// samples/s in a bisect phase is named as its straggler.
	StragglerShare = 0.8
)

func share(p *PhaseResult, name string) float64 {
	if st := p.Summary.Stage(name); st != nil {
		return st.Share
	}
	return 0
}

// PhaseResult is one measured bisect phase.
type PhaseResult struct {
	Name          string             `json:"phase"`
	Batch         int                `json:"batch"`
	Steps         int64              `json:"steps"`
	Seconds       float64            `json:"seconds"`
	StepsPerSec   float64            `json:"steps_per_sec"`
	SamplesPerSec float64            `json:"samples_per_sec"`
	Summary       stage.Summary      `json:"summary"`
	Loader        *stage.LoaderStats `json:"loader,omitempty"`
	// The fields below are pipetop bisect's (a phase run as a process of
	// its own); pipetrain bisect leaves them empty.

	// Status is PhaseOK, PhaseShort, PhaseFailed, PhaseSkipped or
	// PhaseStopped; ExitStatus the command's exit status when it ended by
	// itself, StderrTail the end of its stderr when it failed.
	Status     string `json:"status,omitempty"`
	ExitStatus *int   `json:"exit_status,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
	// Notes say what was unusual about the phase (fewer batches cached, a
	// loader without len(), a script that ended early).
	Notes []string `json:"notes,omitempty"`
	// Waiting is the mean number of the run's threads that were runnable
	// but waiting for a CPU, and Pools those threads by role, over the
	// measured seconds; nil without thread readings.
	Waiting *float64   `json:"threads_waiting,omitempty"`
	Pools   []PoolLoad `json:"pools,omitempty"`
	// Verdict is the one judge's verdict on the phase alone (a straggler
	// when one rank holds the others back).
	Verdict *Verdict `json:"verdict,omitempty"`
	// Ranks are each rank's own figures in a run of several ranks; the
	// phase's figures are then the job's (samples/s summed over ranks).
	// StragglerRank is the rank Straggler names, absent when they kept
	// pace.
	Ranks         []RankPhase `json:"ranks,omitempty"`
	StragglerRank *int        `json:"straggler_rank,omitempty"`
	// CPUCores is the mean of the cores the run's threads were on, and
	// PeakRSS the largest resident memory of the trainer's process tree
	// seen (bytes), over the phase; 0 without readings.
	CPUCores float64 `json:"cpu_cores,omitempty"`
	PeakRSS  int64   `json:"peak_rss_bytes,omitempty"`
	// DataLoader is the training DataLoader as the script made it, when
	// the instrumentation saw it.
	DataLoader *DataLoaderCall `json:"dataloader,omitempty"`
	// RSSGrowth is how much the resident memory of the process tree grew
	// over the measured window: the largest reading of its last third
	// less the largest of its first (bytes; negative: it shrank).
	RSSGrowth int64 `json:"window_rss_growth_bytes,omitempty"`
	// CacheBytes and CacheBatches are the cached and forward phases'
	// cache: bisect's own memory, in PeakRSS but counted apart from the
	// script's (ScriptRSS).
	CacheBytes   int64 `json:"cache_bytes,omitempty"`
	CacheBatches int   `json:"cache_batches,omitempty"`
	// DiskReadPerSec is the bytes a second the run's processes read from
	// storage (the block layer, page-cache hits excluded) over the
	// measured window; 0 without readings.
	DiskReadPerSec float64 `json:"disk_read_bytes_per_sec,omitempty"`
	// Eviction is what the cold phase evicted from the page cache before
	// it ran.
	Eviction *Eviction `json:"eviction,omitempty"`
	// WallSeconds is how long the phase took, start-up and warm-up
	// included.
	WallSeconds float64 `json:"wall_seconds,omitempty"`
	// Cause is a failed phase's error in one line: the end of its stderr,
	// or why nothing instrumented connected. EveryPhase says the failure
	// repeats whatever the phase (it came before the phase could differ,
	// or the phase before failed the same way): the bisect stopped there.
	Cause      string `json:"cause,omitempty"`
	EveryPhase bool   `json:"fails_every_phase,omitempty"`
}

// Eviction is what pipetop bisect dropped from the page cache before its
// cold phase: the regular files under Roots (the directories the warm
// loader phase read from), or the whole cache (Whole, as root).
type Eviction struct {
	Roots []string `json:"roots,omitempty"`
	Files int      `json:"files"`
	Bytes int64    `json:"bytes"`
	Whole bool     `json:"whole_cache,omitempty"`
	// Note says what could not be evicted, "" when all was.
	Note string `json:"note,omitempty"`
}

// ScriptRSS is the phase's peak RSS less bisect's own cache (bytes).
func (p *PhaseResult) ScriptRSS() int64 {
	return max(0, p.PeakRSS-p.CacheBytes)
}

// DataLoaderCall is where a script made its training DataLoader and the
// settings it gave it (what pipetop tune may change).
type DataLoaderCall struct {
	// Site is FILE:LINE of the call (the file's base name); Path the
	// file's full path.
	Site string `json:"site"`
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
	// The arguments in effect (prefetch_factor null with no workers).
	NumWorkers        int  `json:"num_workers"`
	PrefetchFactor    *int `json:"prefetch_factor"`
	PersistentWorkers bool `json:"persistent_workers"`
	PinMemory         bool `json:"pin_memory"`
	BatchSize         int  `json:"batch_size,omitempty"`
	Iterable          bool `json:"iterable,omitempty"`
}

// Phase statuses of pipetop bisect.
const (
	PhaseOK      = "ok"      // measured for the time asked
	PhaseShort   = "short"   // the command ended before: measured on what ran
	PhaseFailed  = "failed"  // the command failed (its exit status and stderr are kept)
	PhaseSkipped = "skipped" // could not run (no DataLoader for loader and cached); Notes say why
	PhaseStopped = "stopped" // interrupted (Ctrl-C) while it ran
	PhaseRefused = "refused" // stopped by a guard (pipetop tune's memory guard); Notes say why
)

// Measured is whether the phase has figures to compare: a throughput,
// and it was neither failed, skipped nor refused.
func (p *PhaseResult) Measured() bool {
	return p.Rate() > 0 && p.Status != PhaseSkipped && p.Status != PhaseFailed && p.Status != PhaseRefused
}

// Rate is the phase's samples/s, or its steps/s when its batches had no
// samples to count (a loop without a DataLoader); RateUnit names it.
func (p *PhaseResult) Rate() float64 {
	if p.SamplesPerSec > 0 {
		return p.SamplesPerSec
	}
	return p.StepsPerSec
}

// RateUnit is the unit of Rate: "samples/s" or "steps/s".
func (p *PhaseResult) RateUnit() string {
	if p.SamplesPerSec > 0 {
		return "samples/s"
	}
	return "steps/s"
}

// Straggler is the rank of a phase of several ranks that delivered less
// than StragglerShare of the fastest rank's samples/s, the slowest such;
// ok is false when the ranks kept pace.
func (p *PhaseResult) Straggler() (slow, fast RankPhase, ok bool) {
	if len(p.Ranks) < 2 {
		return slow, fast, false
	}
	slow, fast = p.Ranks[0], p.Ranks[0]
	for _, r := range p.Ranks[1:] {
		if r.SamplesPerSec < slow.SamplesPerSec {
			slow = r
		}
		if r.SamplesPerSec > fast.SamplesPerSec {
			fast = r
		}
	}
	return slow, fast, slow.SamplesPerSec < StragglerShare*fast.SamplesPerSec
}

// PoolLoad is one role of threads (training, worker, intra-op, ...) in a
// bisect phase: how many there were, and the cores they ran on and waited
// for, on average.
type PoolLoad struct {
	Role    string  `json:"role"`
	Threads int     `json:"threads"`
	CPU     float64 `json:"cpu_cores"`
	Wait    float64 `json:"wait_cores"`
}

// RankPhase is one rank's figures in a bisect phase.
type RankPhase struct {
	Rank          int           `json:"rank"`
	PID           int           `json:"pid"`
	Steps         int64         `json:"steps"`
	StepsPerSec   float64       `json:"steps_per_sec"`
	SamplesPerSec float64       `json:"samples_per_sec"`
	Summary       stage.Summary `json:"summary"`
	Verdict       *Verdict      `json:"verdict,omitempty"`
}

// DiagnoseBisect compares the phases of a bisect run (of one or more batch
// sizes) and names the bottleneck with the numbers behind it. The stage-level
// detail of the full phase comes from Diagnose, the same rules pipetop uses.
func DiagnoseBisect(phases []PhaseResult) Verdict {
	batch := mainBatch(phases)
	get := func(name string) *PhaseResult { return findPhase(phases, name, batch) }
	full, fixed, ld, syn := get(PhaseFull), get(PhaseTrainFixed), get(PhaseLoader), get(PhaseSynthetic)
	if fixed == nil && scriptPhases(phases) {
		return diagnoseScript(phases, get)
	}
	if full == nil || fixed == nil || ld == nil {
		return Verdict{Kind: WarmingUp, Headline: "bisect incomplete: the full, train-fixed and loader phases are needed",
			Next: "run all phases"}
	}
	net, load, all := fixed.SamplesPerSec, ld.SamplesPerSec, full.SamplesPerSec
	switch {
	case load < LoaderShort*net:
		return Verdict{Kind: InputBound, Stage: stage.DataWait,
			Headline: fmt.Sprintf("input-bound: the loader delivers %s samples/s, the network can take %s; the full pipeline runs at %s",
				num(load), num(net), num(all)),
			Next: InputAdvice(ld.Loader)}
	case syn != nil && syn.SamplesPerSec < UploadShort*net && share(syn, stage.H2D) >= UploadShare:
		return Verdict{Kind: StageBound, Stage: stage.H2D,
			Headline: fmt.Sprintf("upload-bound: with in-memory batches the loop runs at %s samples/s, on a fixed device batch at %s",
				num(syn.SamplesPerSec), num(net)),
			Next: "the host-to-device copy or batch handling costs the difference: pin and reuse staging buffers, copy on a side stream"}
	case load < LoaderMargin*net && ld.Loader != nil && ld.Loader.ReadAmp >= HighReadAmp:
		// Barely faster alone, decoding many times the bytes it uses: the
		// loader is what the network and it fight over.
		return Verdict{Kind: InputBound, Stage: stage.DataWait,
			Headline: fmt.Sprintf("input-bound: the loader decodes %.0fx the bytes it uses and delivers %s samples/s alone, the network can take %s; together they reach %s",
				ld.Loader.ReadAmp, num(load), num(net), num(all)),
			Next: InputAdvice(ld.Loader)}
	case all < TogetherShort*min(load, loopRate(net, syn)) && competes(all, load):
		return contention(load, net, all, ld.Loader)
	}
	return pipelineVerdict(phases, batch, full, syn, ld, net)
}

// scriptPhases is whether phases are pipetop bisect's (a script run once
// per phase): each has a status, pipetrain's none.
func scriptPhases(phases []PhaseResult) bool {
	for _, p := range phases {
		if p.Status != "" || p.Name == PhaseCached || p.Name == PhaseCold {
			return true
		}
	}
	return false
}

// pipelineVerdict judges the full phase by its stages (the same rules
// pipetop uses live) once the phases show neither a short loader nor
// contention, with the figures that frame it; a step the stages call the
// network's follows the phases (networkVerdict).
func pipelineVerdict(phases []PhaseResult, batch int, full, syn, ld *PhaseResult, net float64) Verdict {
	all, load := full.SamplesPerSec, ld.SamplesPerSec
	v := Judge(Inputs{Summary: full.Summary, Loader: full.Loader, Complete: true})
	if v.Kind == ComputeBound {
		var input bool
		if v, input = networkVerdict(v, full, ld, net); input {
			return v
		}
	}
	if v.Kind == InputBound {
		// The loader keeps up alone; the stage view still sees waiting.
		v.Next += fmt.Sprintf(" (alone the loader delivers %s samples/s vs %s needed)", num(load), num(net))
	}
	if best := bestBatch(phases); best != nil && best.Batch != batch && best.SamplesPerSec > 1.2*all {
		v.Next = fmt.Sprintf("batch %d gives %.1fx the samples/s of batch %d (%s vs %s); %s",
			best.Batch, best.SamplesPerSec/all, batch, num(best.SamplesPerSec), num(all), v.Next)
	}
	v.Headline = fmt.Sprintf("%s (full pipeline %s samples/s = %.0f %% of the network alone)", v.Headline, num(all), 100*all/net)
	if loop := loopRate(net, syn); all < TogetherShort*loop && !competes(all, load) {
		v.Headline += fmt.Sprintf("; it ran at %.0f %% of the loop on in-memory batches with the loader needed for %.1f %% of what it delivers alone, so the loader did not cause the difference (other load on the machine?)",
			100*all/loop, 100*all/load)
	}
	return v
}

// networkVerdict follows the phases when the full phase's stages say its
// step is the network's: at LoaderShort of the network alone on a fixed
// batch or more, the network is the limit as measured and a faster device
// or a smaller model is what helps (v with that advice); below it, with a
// loader busy enough to take the network's cores (competes) that decodes
// HighReadAmp times the bytes it uses, the loader costs the difference,
// however fast it is alone (input = true: input-bound, with the rechunk);
// below it otherwise, v says that what runs beside the network costs the
// difference (pipelineVerdict's headline says whether the loader sat idle).
func networkVerdict(v Verdict, full, ld *PhaseResult, net float64) (_ Verdict, input bool) {
	all, load := full.SamplesPerSec, ld.SamplesPerSec
	if all >= LoaderShort*net {
		v.Next = fmt.Sprintf("the input keeps up: the full pipeline runs at %.0f %% of the network alone on a fixed batch, so a faster device or a smaller model is what helps now", 100*all/net)
		return v, false
	}
	l := full.Loader
	if ld.Loader != nil {
		l = ld.Loader
	}
	if !competes(all, load) || l == nil || l.ReadAmp < HighReadAmp {
		v.Next = fmt.Sprintf("the full pipeline runs at %.0f %% of the network alone on a fixed batch: what runs beside the network (the loader's workers, other load on the machine) costs the difference, which a faster device or a smaller model would not recover",
			100*all/net)
		return v, false
	}
	head := fmt.Sprintf("input-bound: the network alone takes %s samples/s on a fixed batch, the full pipeline reaches %s (%.0f %%); the loader, which delivers %s alone decoding %.0fx the bytes it uses, costs the difference on the network's cores",
		num(net), num(all), 100*all/net, num(load), l.ReadAmp)
	return Verdict{Kind: InputBound, Stage: stage.DataWait, Headline: head, Next: InputAdvice(l)}, true
}

// competes is whether the loader, delivering load samples/s alone, was
// busy enough at the pipeline's rate all to take cores from the network.
func competes(all, load float64) bool {
	return all >= LoaderIdle*load
}

// loopRate is what the network side can take: the network on its fixed
// batch, or less when the loop on in-memory batches (upload and batch
// handling included) is slower still. A full run as slow as the
// synthetic one is the loop's limit, not the two halves fighting.
func loopRate(net float64, syn *PhaseResult) float64 {
	if syn != nil && syn.SamplesPerSec > 0 {
		return min(net, syn.SamplesPerSec)
	}
	return net
}

// contention: each half is fast enough alone, together they are slow.
// With a high read amplification the loader burns its cores decoding
// bytes it throws away, so rechunking (less loader CPU) comes before
// splitting the cores.
func contention(load, net, all float64, l *stage.LoaderStats) Verdict {
	v := Verdict{Kind: Balanced,
		Headline: fmt.Sprintf("contention: the loader alone delivers %s samples/s and the network alone takes %s, but together they reach %s",
			num(load), num(net), num(all)),
		Next: "they compete for the same CPU cores: lower the loader's --workers or the network's --threads so they add up to the cores"}
	if l != nil && l.ReadAmp >= HighReadAmp {
		v.Headline += fmt.Sprintf("; the loader decodes %.1fx the bytes it uses (workers busy %s)", l.ReadAmp, units.Pct(l.WorkerBusy))
		v.Next = fmt.Sprintf("first cut the loader's CPU: run `pipetrain data rechunk %s --chunk-frames 1` (or train with --sampler chunk); then, if they still compete, lower --workers or --threads so they add up to the cores",
			rechunkArgs(l.Dataset))
	}
	return v
}

// mainBatch is the batch size of the first measured full phase (of the
// first measured phase without one).
func mainBatch(phases []PhaseResult) int {
	for _, p := range phases {
		if p.Name == PhaseFull && p.Measured() {
			return p.Batch
		}
	}
	for _, p := range phases {
		if p.Measured() && p.Name != PhaseLoader {
			return p.Batch
		}
	}
	return 0
}

// findPhase is the measured phase name at batch (the loader at any batch).
func findPhase(phases []PhaseResult, name string, batch int) *PhaseResult {
	for i := range phases {
		if phases[i].Name == name && phases[i].Measured() && (phases[i].Batch == batch || name == PhaseLoader) {
			return &phases[i]
		}
	}
	return nil
}

// bestBatch is the full phase with the most samples/s over a batch sweep.
func bestBatch(phases []PhaseResult) *PhaseResult {
	var best *PhaseResult
	for i := range phases {
		if p := &phases[i]; p.Name == PhaseFull && p.Measured() && (best == nil || p.SamplesPerSec > best.SamplesPerSec) {
			best = p
		}
	}
	return best
}

func num(f float64) string {
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.2f", f)
	}
}
