package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Kinds of the network rules: no default culprit.
const (
	// Contention: the step is the network's, and other work of the run
	// (loader workers, other processes, other threads) uses the cores it
	// runs on.
	Contention Kind = "contention"
	// PreprocessBound: transforms and augmentation on the training
	// thread, outside the model, take much of each step.
	PreprocessBound Kind = "preprocess-bound"
)

// Thresholds of the network rules.
const (
	// BesideCores: the run's threads beside the network's (loader
	// workers, other processes of the run, other threads) used at least
	// this share of the usable cores: the network did not have them to
	// itself, and a faster device or a smaller model is not what the
	// measurements say helps.
	BesideCores = 0.10
	// PreprocessShare: preprocessing on the training thread at or above
	// this share of the step is the verdict.
	PreprocessShare = 0.20
)

// beside is what ran on the run's cores beside the network's threads over
// the window.
type beside struct {
	known   bool    // the run's threads were read
	usable  float64 // the run's usable cores
	cores   float64 // the cores used beside the network, in all
	workers float64 // of which the loader's workers
	parts   []string
	loader  *stage.LoaderStats
}

// besideNetwork is what ran beside the network: the loader's worker
// processes, the run's other processes, the trainer's threads that are not
// the network's (by their role, and the other Python threads the stack
// sampler saw), and a loader whose workers run inside the trainer process
// (pipetrain's: their busy share, at most what the trainer's threads other
// than the training thread used). Unknown without the run's threads.
func besideNetwork(in *Inputs) beside {
	c := hostCPU(in)
	if c == nil || c.UsableCores <= 0 {
		return beside{}
	}
	b := beside{known: true, usable: c.UsableCores, loader: in.Loader, workers: c.WorkerCores}
	l := in.Loader
	inProcess := l != nil && l.Source != "torch" && l.Workers > 0 && c.WorkerCores == 0
	if inProcess {
		others := c.Used
		if c.TrainingCPU >= 0 {
			others = c.Others
		}
		b.workers = min(float64(l.Workers)*l.WorkerBusy, others)
	}
	if b.workers >= 0.005 {
		b.parts = append(b.parts, workersText(l, b.workers, inProcess))
	}
	if c.OtherProcCores >= 0.005 {
		b.parts = append(b.parts, fmt.Sprintf("the run's other processes use %.2f", c.OtherProcCores))
	}
	py, name := pythonThreads(in.Code)
	if side := c.SideCores + py; side >= 0.005 {
		who := "the trainer's other threads"
		if name != "" {
			who += fmt.Sprintf(" (Python thread %q the busiest)", name)
		}
		b.parts = append(b.parts, fmt.Sprintf("%s use %.2f", who, side))
	}
	b.cores = b.workers + c.OtherProcCores + c.SideCores + py
	return b
}

// workersText names the loader's workers and the cores they used.
func workersText(l *stage.LoaderStats, cores float64, inProcess bool) string {
	switch {
	case l == nil || l.Workers == 0:
		return fmt.Sprintf("the run's worker processes use %.2f", cores)
	case inProcess:
		return fmt.Sprintf("%s busy %s use up to %.2f", plural(l.Workers, "loader worker"), units.Pct(l.WorkerBusy), cores)
	}
	return fmt.Sprintf("%s use %.2f", plural(l.Workers, "loader worker"), cores)
}

// pythonThreads is the cores the trainer's other Python threads used (the
// stack sampler's readings) and the name of the busiest.
func pythonThreads(code *stage.CodeProfile) (cores float64, busiest string) {
	if code == nil {
		return 0, ""
	}
	var top float64
	for _, th := range code.Threads {
		cores += th.CPU
		if th.CPU > top {
			top, busiest = th.CPU, th.Name
		}
	}
	return cores, busiest
}

// free reports whether the network had the run's cores to itself: what
// ran beside it used less than BesideCores of them.
func (b beside) free() bool { return b.known && b.cores < BesideCores*b.usable }

// computeBound is the verdict for a step that is the network's on a CPU:
// compute-bound, with "a faster device or a smaller model" only when the
// network had the run's cores to itself; contention when what ran beside
// it used BesideCores of them or more; and, without the run's threads,
// what is unknown and the experiment that settles it.
func computeBound(in *Inputs, s stage.Summary, network float64) Verdict {
	top := largestOf(s, stage.ClassNetwork)
	b := besideNetwork(in)
	step := fmt.Sprintf("the network takes %s of each %s step, most in %s (%s)", units.Pct(network), units.Dur(s.WallMean), top.Name, units.Pct(top.Share))
	v := Verdict{Kind: ComputeBound, Stage: top.Name, Headline: "compute-bound: " + step + "; no GPU timings"}
	switch {
	case !b.known:
		v.Next = "the input keeps up; whether the network had the run's cores to itself is not known here (no readings of the run's threads): " +
			"`pipetop bisect -- CMD` (your training command) runs it alone on cached batches, which settles whether a faster device or a smaller model would help"
	case b.free():
		v.Next = fmt.Sprintf("the input keeps up and the network had the run's %s cores to itself (%.2f used beside it): a faster device or a smaller model is what helps now",
			cores(b.usable), b.cores)
	default:
		v = contended(in, b, step, top.Name)
	}
	return v
}

// contended names who shares the network's cores and what they cost,
// with the fix and the experiment that settles what watching cannot.
func contended(in *Inputs, b beside, step, top string) Verdict {
	head := fmt.Sprintf("contention: %s of %s cores beside the network; %s", strings.Join(b.parts, ", "), cores(b.usable), step)
	if tw := trainingWait(hostCPU(in)); tw >= 0 {
		head += fmt.Sprintf("; the training thread waited %s of its time for a CPU", units.Pct(tw))
	}
	var fix []string
	if b.workers >= BesideCores*b.usable/2 {
		fix = append(fix, workersFix(b))
	}
	if rest := b.cores - b.workers; rest >= BesideCores*b.usable/2 {
		fix = append(fix, "run the trainer's other work (its other threads and processes) less often or off the training cores")
	}
	if len(fix) == 0 {
		fix = append(fix, "less work beside the network")
	}
	next := strings.Join(fix, "; ") + "; " + settle(b.loader)
	return Verdict{Kind: Contention, Stage: top, Headline: head, Next: next}
}

// settle names the experiment that settles what watching cannot: the
// network alone, against the full run.
func settle(l *stage.LoaderStats) string {
	switch {
	case l != nil && l.Source == "":
		return "`pipetrain bisect` measures the network alone on a fixed batch: the gain to expect"
	case l != nil && l.Workers > 0:
		return "`pipetop tune -- CMD` (your training command) tries the DataLoader's settings, and `pipetop bisect -- CMD` runs the network alone on cached batches: the gain to expect"
	}
	return "`pipetop bisect -- CMD` (your training command) runs the network alone on cached batches: the gain to expect"
}

// workersFix is the fix for loader workers that take the network's
// cores: fewer of them when fewer would keep up (their busy time over
// BusyWorkers), else cheaper samples.
func workersFix(b beside) string {
	l := b.loader
	if l == nil || l.Workers == 0 {
		return "cheaper work in the worker processes"
	}
	busy := float64(l.Workers) * l.WorkerBusy
	if len(l.WorkerBusyEach) > 0 {
		busy = 0
		for _, w := range l.WorkerBusyEach {
			busy += w
		}
	}
	enough := max(1, int(math.Ceil(busy/BusyWorkers)))
	cheaper := "cheaper samples (less work in __getitem__, or precomputed)"
	if l.Source == "" {
		cheaper = "a cheaper dataset layout (1-frame chunks, a lighter codec)"
	}
	if enough < l.Workers {
		what := fmt.Sprintf("num_workers=%d", enough)
		if l.Source == "" {
			what = fmt.Sprintf("--workers %d", enough)
		}
		return fmt.Sprintf("fewer loader workers: %s would keep up (the %d are busy %s on average), or %s", what, l.Workers, units.Pct(busy/float64(l.Workers)), cheaper)
	}
	return cheaper + ": the workers are busy " + units.Pct(busy/float64(l.Workers)) + " and fewer would not keep up"
}

// preprocessBound is the verdict for transforms and augmentation on the
// training thread, outside the model, that take PreprocessShare of each
// step or more: with stack samples, the code they spend it in.
func preprocessBound(s stage.Summary, share float64, l *stage.LoaderStats, code *stage.CodeProfile) Verdict {
	v := Verdict{Kind: PreprocessBound, Stage: stage.Preprocess,
		Headline: fmt.Sprintf("preprocess-bound: transforms and augmentation on the training thread take %s of each %s step (%s), outside the model",
			units.Pct(share), units.Dur(s.WallMean), units.Dur(s.Stage(stage.Preprocess).Mean))}
	if g := code.Group(stage.RoleTrain, stage.Preprocess); g != nil && g.Hot != nil {
		v.Headline += "; they spend " + Phrase(g.Hot)
	}
	where := "into the Dataset's __getitem__, where the DataLoader's workers run them in parallel off the training thread"
	if l != nil && l.Source == "torch" && l.Workers == 0 {
		where += " (with num_workers=2 or more)"
	}
	v.Next = "move them " + where + ", or run them batched on the device (one call on the whole batch tensor, after the copy to the GPU)"
	return v
}
