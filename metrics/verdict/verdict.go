// Package verdict is pipetop's judging: it turns what metrics/stage
// measured (a window's summary, the loader's statistics, the in-flight
// step, the host readings, every rank's summary, the stack samples'
// profile) into one plain-language finding, the bottleneck and one next
// step.
//
// Judge applies every rule to one Inputs and keeps the finding whose kind
// comes first in Kinds, the verdict table: each kind's severity, its
// precedence (its place in the table), whether it is healthy, its anchor in
// docs/verdicts.md and the thresholds its rules read. A viewer calls Judge
// once per refresh; the screen, --json, the exporter and pipetrain bisect
// (DiagnoseBisect over its phases) all read that one implementation. The
// straggler and stopped-rank rules read every rank's RankSummary; the
// drift rule a Baseline of the run's first minutes.
//
// The package imports metrics/stage and never the other way: measuring
// knows nothing of how it is judged.
package verdict

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Kind names the bottleneck a Verdict found.
type Kind string

// Verdict kinds. Kinds (kinds.go) gives each its severity and precedence;
// docs/verdicts.md explains each rule and its thresholds.
const (
	Starting      Kind = "starting"
	WarmingUp     Kind = "warming-up"
	Stalled       Kind = "stalled"
	MemoryFull    Kind = "memory-full"
	MemoryCreep   Kind = "memory-creep"
	Swapping      Kind = "swapping"
	Drift         Kind = "drift"
	InputStalls   Kind = "input-stalls"
	InputBound    Kind = "input-bound"
	ModerateInput Kind = "moderately-input-bound"
	GPUBound      Kind = "gpu-bound"
	LaunchBound   Kind = "launch-bound"
	ComputeBound  Kind = "compute-bound"
	SyncBound     Kind = "sync-bound"
	StageBound    Kind = "stage-bound"
	Untimed       Kind = "untimed"
	Balanced      Kind = "balanced"
	Straggler     Kind = "straggler"
	RankStopped   Kind = "rank-stopped"
	// The CPU kinds: the run's threads and the CPU it may use.
	Throttled           Kind = "throttled"
	Oversubscribed      Kind = "oversubscribed"
	TrainingThreadBound Kind = "training-thread-bound"
	// LoaderTakesCores: the loader keeps up by decoding amplified chunks
	// on the cores the network needs.
	LoaderTakesCores Kind = "loader-takes-cores"
	// The kinds only pipetop bisect gives: a script that fails whatever
	// the phase, and a loader held back by its storage (the cold phase).
	ScriptFailed Kind = "script-failed"
	StorageBound Kind = "storage-bound"
)

// Thresholds of the verdict rules, as fractions of the mean step wall time
// unless said otherwise. docs/verdicts.md documents them.
const (
	MinSteps         = 5    // fewer steps than this (and MinJudgeNs of them): warming up
	MinJudgeNs       = 2e9  // ns of step time that suffice to judge fewer than MinSteps steps
	InputShare       = 0.30 // data_wait at or above this: input-bound
	ModerateShare    = 0.10 // data_wait at or above this (below InputShare): moderately input-bound
	GPUBusyBound     = 0.90 // GPU busy at or above this: GPU-bound
	LaunchGPUBusy    = 0.50 // GPU busy below this while network stages dominate: launch-bound
	NetworkShare     = 0.50 // h2d+forward+backward+optim at or above this: the network dominates
	SyncShare        = 0.20 // sync at or above this: sync-bound
	OtherShare       = 0.20 // other at or above this: untimed work
	SingleStageShare = 0.50 // any other single stage at or above this: that stage
	HighReadAmp      = 4.0  // loader read amplification at or above this: rechunk advice
	BusyWorkers      = 0.85 // loader workers busier than this: add workers or decode faster
	KeepUp           = 0.90 // workers kept busy delivering below this share of what the loop takes: slow on average
)

// Verdict is a plain-language diagnosis of where a step's time goes.
type Verdict struct {
	Kind     Kind   `json:"kind"`
	Stage    string `json:"stage,omitempty"` // the stage the verdict names, if any
	Rank     *int   `json:"rank,omitempty"`  // the rank the verdict names (straggler), if any
	Headline string `json:"headline"`        // one line with the numbers behind it
	Next     string `json:"next"`            // one suggested next step
	// Also are the run's other costs of AlsoShare of its time or more (and
	// the memory and GIL findings) that the verdict's kind does not name.
	Also []Cost `json:"also,omitempty"`
}

// String is the verdict as one line: headline, then the next step, then
// what else costs the run ("also: ...").
func (v Verdict) String() string {
	s := v.Headline
	if v.Next != "" {
		s += " — " + v.Next
	}
	if len(v.Also) > 0 {
		s += " — also: " + AlsoText(v.Also)
	}
	return s
}

// Inputs is everything the verdict rules read. Only Summary is required;
// each optional part enables the rules that need it.
type Inputs struct {
	// Summary aggregates the steps of the chosen window.
	Summary stage.Summary
	// Loader is the latest loader statistics, nil when unknown.
	Loader *stage.LoaderStats
	// NowNs is the viewer's clock (Unix ns); 0 turns the time rules off.
	NowNs int64
	// Live says the trainer is connected: only a live trainer can be
	// starting or stalled.
	Live bool
	// StartNs is when the trainer started (Unix ns), 0 when unknown.
	StartNs int64
	// Progress is the latest in-flight sample, nil when none came.
	Progress *stage.Progress
	// Baseline aggregates the run's first minutes, for drift; nil or
	// empty until known.
	Baseline *stage.Summary
	// BaselineFirst is the number of the first step the baseline was
	// offered (Baseline.First): when more steps came before it than the
	// baseline holds, a viewer attached late and the baseline is not the
	// run's first minutes.
	BaselineFirst int64
	// Host is what the viewer measured around the trainer; nil when
	// unknown.
	Host *Host
	// Complete marks a finished measurement (a bisect phase): it is judged
	// however few its steps, since no more will come.
	Complete bool
	// Ranks are the window summaries of every connected rank of the run,
	// for the straggler rule; nil for a single process.
	Ranks []RankSummary
	// Code is which code the window's stack samples went to; nil when the
	// trainer sends none.
	Code *stage.CodeProfile
	// Measured is what pipetop tune measured of this script's input
	// pipeline; nil when no tune of it was found.
	Measured *Measured
}

// Measured is pipetop tune's measured advice for a script: the winning
// setting, its speed-up over the script's own in full runs, and the
// report it comes from.
type Measured struct {
	Advice  string
	SpeedUp float64
	File    string
}

// inputNext is the next step of an input-bound verdict: what pipetop tune
// measured, when it tuned this script, else the rule's advice.
func inputNext(in *Inputs, l *stage.LoaderStats) string {
	m := in.Measured
	if m == nil {
		return InputAdvice(l)
	}
	if m.SpeedUp <= 1 || m.Advice == "" {
		return fmt.Sprintf("pipetop tune measured this script's DataLoader settings (%s) and none beat its own: the input's cost is in the data itself (%s)", m.File, InputAdvice(l))
	}
	return fmt.Sprintf("measured by pipetop tune (%s): %s gave %.2fx the samples/s of the script's own settings in full runs; apply it (pipetop run --apply %s) or write it in the script", m.File, m.Advice, m.SpeedUp, m.File)
}

// Diagnose applies the verdict rules to a window summary and, when known,
// the loader's statistics (l may be nil). It is Judge without the time,
// host and history inputs.
func Diagnose(s stage.Summary, l *stage.LoaderStats) Verdict {
	return Judge(Inputs{Summary: s, Loader: l})
}

// Judge applies every verdict rule and keeps the finding whose kind comes
// first in Kinds (on a tie, the rule listed first), with the run's other
// costs it does not name (Also). It is the one verdict of a refresh: the
// screen, --json, the exporter and bisect all call it.
func Judge(in Inputs) Verdict {
	var best Verdict
	rank := -1
	for _, r := range rules {
		if v, ok := r(&in); ok {
			if p := Precedence(v.Kind); rank < 0 || p < rank {
				best, rank = v, p
			}
		}
	}
	best.Also = Also(&in, best)
	return best
}

// rankRule is the straggler rule over the run's ranks.
func rankRule(in *Inputs) (Verdict, bool) {
	if someBlocked(in.Ranks, in.NowNs) {
		return Verdict{}, false // old windows of blocked ranks say nothing about speed
	}
	return DiagnoseRanks(in.Ranks)
}

// stoppedRule names a rank that stopped while the others wait for it.
func stoppedRule(in *Inputs) (Verdict, bool) { return DiagnoseStopped(in.Ranks, in.NowNs) }

// steadyRule judges where the window's time goes; it always finds
// something (balanced, at least).
func steadyRule(in *Inputs) (Verdict, bool) { return steady(in), true }

// steady judges where the time of the window's steps goes.
func steady(in *Inputs) Verdict {
	s, l := in.Summary, in.Loader
	if s.Steps < MinSteps && in.Progress != nil {
		s = foldInFlight(s, in.Progress, in.NowNs)
	}
	share := func(name string) float64 {
		if st := s.Stage(name); st != nil {
			return st.Share
		}
		return 0
	}
	wait := share(stage.DataWait)
	network := classShare(s, stage.ClassNetwork)
	g := gpuOf(s, in.Host)
	switch {
	case wait >= ModerateShare && s.Waits.Bursty() && !inTurn(s, l):
		return inputStalls(s, wait, l, in.Code)
	case wait >= InputShare:
		v := inputBound(s, wait, g, l, in.Code)
		v.Next = inputNext(in, l)
		return v
	case g.known && g.busy >= GPUBusyBound && g.trusted:
		return Verdict{Kind: GPUBound, Headline: fmt.Sprintf("GPU-bound: the GPU is busy %s of each %s step%s", units.Pct(g.busy), units.Dur(s.WallMean), g.label()),
			Next: "the pipeline keeps up; speed now comes from the model: bf16, a larger batch, fewer or cheaper layers"}
	case share(stage.Preprocess) >= PreprocessShare:
		return preprocessBound(s, share(stage.Preprocess), l, in.Code)
	case g.known && network >= NetworkShare && g.busy < LaunchGPUBusy:
		return Verdict{Kind: LaunchBound, Headline: fmt.Sprintf("launch-bound: the CPU spends %s of each step issuing the network while the GPU is busy %s%s", units.Pct(network), units.Pct(g.busy), g.label()),
			Next: "raise the batch size (fewer, larger kernels) or capture the step in a CUDA graph"}
	case share(stage.Sync) >= SyncShare:
		return syncBound(s, share(stage.Sync))
	case share(stage.Other) >= OtherShare:
		return untimed(s, share(stage.Other), in.Code, in.Host)
	case share(stage.Eval) >= EvalShare:
		return evalBound(s, share(stage.Eval))
	}
	if name, sh := biggestOther(s); sh >= SingleStageShare {
		next := fmt.Sprintf("look inside %s: it dominates the step", name)
		if stage.ClassOf(name) == stage.ClassComm {
			next = "the ranks wait for each other: the slowest rank sets the pace; attach to the whole run to see which one, or overlap the all-reduce with backward"
		}
		return Verdict{Kind: StageBound, Stage: name, Headline: fmt.Sprintf("%s-bound: stage %s takes %s of each step (%s)", name, name, units.Pct(sh), units.Dur(s.Stage(name).Mean)),
			Next: next}
	}
	if wait >= ModerateShare {
		return moderateInput(s, wait, l, in.Code)
	}
	if !s.HasGPU && network >= NetworkShare {
		return computeBound(in, s, network)
	}
	return Verdict{Kind: Balanced, Headline: fmt.Sprintf("balanced: no stage dominates (largest %s)", largest(s)),
		Next: "profile the largest stage further"}
}

// syncBound is the verdict for explicit synchronization that takes
// SyncShare of each step or more, with its period when it recurs.
func syncBound(s stage.Summary, share float64) Verdict {
	v := Verdict{Kind: SyncBound, Stage: stage.Sync, Headline: fmt.Sprintf("sync-bound: explicit synchronization takes %s of each step (%s)", units.Pct(share), units.Dur(s.Stage(stage.Sync).Mean)),
		Next: "read the loss back less often (raise --log-every) and avoid .item()/.cpu() in the loop"}
	if p := s.PauseOf(stage.Sync); periodic(p) {
		v.Headline += ": " + pauseText(p, s)
		v.Next = fmt.Sprintf("what reads back from the device every %d steps (a log, a metric, a .cpu() copy) waits %s for the queued work: do it less often or without blocking", p.Period, units.Dur(p.EachNs()))
	}
	return v
}

// InputAdvice is the suggested next step for an input-bound pipeline, given
// the loader's statistics (nil when unknown). Every finding that applies is
// named, most effective first.
func InputAdvice(l *stage.LoaderStats) string {
	if l == nil {
		return "add loader workers, cache decoded data, or check the dataset's chunking"
	}
	if l.Source == "torch" {
		return torchAdvice(l)
	}
	var advice []string
	if l.ReadAmp >= HighReadAmp {
		advice = append(advice, fmt.Sprintf("the chunking decodes %.0fx the bytes it uses: run `pipetrain data rechunk %s --chunk-frames 1` (or train with --sampler chunk)", l.ReadAmp, rechunkArgs(l.Dataset)))
	}
	switch {
	case l.Workers == 0:
		advice = append(advice, "the loader decodes inline on the training thread: use --workers 2 or more")
	case l.WorkerBusy >= BusyWorkers:
		advice = append(advice, fmt.Sprintf("all %d loader workers are busy %s of the time: add workers or use a faster codec (blosc lz4)", l.Workers, units.Pct(l.WorkerBusy)))
	case len(advice) == 0:
		advice = append(advice, fmt.Sprintf("loader workers are busy only %s: look for I/O stalls or a small prefetch queue (%d/%d ready)",
			units.Pct(l.WorkerBusy), l.QueueDepth, l.QueueCap))
	}
	return strings.Join(advice, "; ")
}

// torchAdvice is InputAdvice for a PyTorch DataLoader, in its own terms:
// an amplified source's fix first (a Zarr array's rechunking), then what
// the batches' trip from the workers costs (tripAdvice), then the
// workers; an HDF5 file opened before the workers fork is named last.
func torchAdvice(l *stage.LoaderStats) string {
	var advice []string
	if z, ok := readAdvice(l); ok {
		advice = append(advice, z)
	}
	if t, ok := tripAdvice(l); ok {
		advice = append(advice, t)
	}
	switch {
	case len(advice) == 0:
		advice = append(advice, workersAdvice(l))
	case Saturated(l):
		advice = append(advice, "then, if the workers still cannot keep up, "+workersAdvice(l))
	}
	if f, ok := hdf5ForkAdvice(l); ok {
		advice = append(advice, f)
	}
	return strings.Join(advice, "; ")
}

// workersAdvice is the DataLoader's workers advice.
func workersAdvice(l *stage.LoaderStats) string {
	switch {
	case l.Workers == 0:
		return "the DataLoader loads batches on the training thread: set num_workers=2 or more"
	case l.WorkerBusy < BusyWorkers && epochRestart(l, 0):
		return persistentAdvice(l)
	case l.WorkerBusy >= BusyWorkers:
		advice := fmt.Sprintf("%d workers are busy %s: raise num_workers", l.Workers, units.Pct(l.WorkerBusy))
		if idle := l.Cores - l.Workers - 1; idle > 0 {
			want := l.Workers + idle
			if want > 2*l.Workers+2 {
				want = 2*l.Workers + 2
			}
			advice = fmt.Sprintf("%d workers are busy %s: raise num_workers to %d; %d cores idle", l.Workers, units.Pct(l.WorkerBusy), want, idle)
		}
		return advice + ", or make __getitem__ cheaper"
	}
	return fmt.Sprintf("DataLoader workers are busy only %s: look for I/O stalls, a small prefetch_factor (%d, %d/%d batches ready) or a slow collate_fn",
		units.Pct(l.WorkerBusy), l.Prefetch, l.QueueDepth, l.QueueCap)
}

// biggestOther returns the largest stage that no earlier rule covers: a
// custom stage, the ranks waiting for each other (comm), or with GPU timings
// a network stage that alone dominates.
func biggestOther(s stage.Summary) (string, float64) {
	var name string
	var best float64
	for _, st := range s.Stages {
		if c := stage.ClassOf(st.Name); (c == stage.ClassCustom || c == stage.ClassComm) && st.Share > best {
			name, best = st.Name, st.Share
		}
	}
	for _, st := range s.Stages {
		if stage.ClassOf(st.Name) == stage.ClassNetwork && st.Share > best && st.Share >= SingleStageShare && s.HasGPU {
			name, best = st.Name, st.Share
		}
	}
	return name, best
}

// classShare is the summed share of the stages of class c.
func classShare(s stage.Summary, c stage.Class) float64 {
	var sum float64
	for _, st := range s.Stages {
		if stage.ClassOf(st.Name) == c {
			sum += st.Share
		}
	}
	return sum
}

// largestOf returns the largest stage of class c.
func largestOf(s stage.Summary, c stage.Class) stage.StageStat {
	var best stage.StageStat
	for _, st := range s.Stages {
		if stage.ClassOf(st.Name) == c && st.Share > best.Share {
			best = st
		}
	}
	return best
}

func largest(s stage.Summary) string {
	st := append([]stage.StageStat(nil), s.Stages...)
	sort.Slice(st, func(i, j int) bool { return st[i].Share > st[j].Share })
	if len(st) == 0 {
		return "none"
	}
	return fmt.Sprintf("%s %s", st[0].Name, units.Pct(st[0].Share))
}
