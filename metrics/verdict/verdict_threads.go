package verdict

import (
	"fmt"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// GILBound is the kind of the GIL rule: another Python thread of the
// trainer process holds the GIL while the training thread waits for it.
const GILBound Kind = "gil-bound"

// Thresholds of the GIL rule.
const (
	GILThreadShare  = 0.15 // another Python thread runs holding the GIL at least this share of a core ...
	GILOverTraining = 2.0  // ... and at least this many times the training thread's share of a core ...
	GILMinProbes    = 5    // ... (its CPU without the GIL known from at least this many probes) ...
	GILTrainingCPU  = 0.50 // ... while the training thread is on a CPU at most this share of the time ...
	GILSwitches     = 50   // ... and blocks at least this many times a second (voluntary switches) ...
	GILResultWait   = 0.50 // ... but not this share of its samples in a wait for another thread's result
)

// waitLibs are the standard modules whose functions a thread blocks in
// when it waits for another thread's result (a queue, a future, a
// condition).
var waitLibs = map[string]bool{"threading": true, "queue": true, "concurrent": true, "asyncio": true, "selectors": true, "multiprocessing": true}

// gilRule: a Python thread of the trainer process runs Python code (it
// holds the GIL) much of the time while the training thread is seldom on a
// CPU and blocks many times a second: it waits for the GIL. (On a loaded
// host the training thread also queues for a CPU after each hand-over, so
// the rule reads the time it ran, not the time it wanted a CPU.)
// Threads that run native code without the GIL (torch's pools, the
// pin-memory thread, a thread in a big torch.mm or a sleep) are not
// blamed: the Python stack sampler finds them running while it holds the
// GIL (stage.ThreadProfile.Free).
func gilRule(in *Inputs) (Verdict, bool) {
	c := hostCPU(in)
	if c == nil || c.TrainingCPU < 0 || c.TrainingCPU > GILTrainingCPU || c.TrainingSwitches < 0 {
		return Verdict{}, false
	}
	blocks := c.TrainingSwitches - max(0, c.TrainingPreempted)
	if blocks < GILSwitches {
		return Verdict{}, false
	}
	if g := gpuOf(in.Summary, in.Host); g.known && g.trusted && g.busy >= GPUBusyBound {
		return Verdict{}, false // the step waits for the GPU, not for the GIL
	}
	th := gilThread(in.Code, c.TrainingCPU)
	if th == nil || resultWait(in.Code) >= GILResultWait {
		return Verdict{}, false // a producer thread the loop waits on is its input, not a GIL holder
	}
	head := fmt.Sprintf("gil-bound: Python thread %q (tid %d) holds the GIL %s of a core", th.Name, th.TID, units.Pct(th.GIL()))
	if w, ok := th.Where(); ok {
		head += " in " + funcText(w) + fmt.Sprintf(" at %s:%d", w.File, w.Line)
	}
	head += fmt.Sprintf(" while the training thread is on a CPU %s of the time and blocks %.0f times a second waiting for it",
		units.Pct(c.TrainingCPU), blocks)
	return Verdict{Kind: GILBound, Headline: head,
		Next: fmt.Sprintf("the training loop waits for the GIL that %q holds: move its work to a process (multiprocessing), make it sleep between rounds or batch its work (every N steps), or do it in code that releases the GIL (numpy/torch on whole arrays)", th.Name)}, true
}

// gilThread is the thread that holds the GIL the most, if it passes the
// rule's thresholds against the training thread's share of a core on a
// CPU; nil when none does.
func gilThread(code *stage.CodeProfile, trainingCPU float64) *stage.ThreadProfile {
	if code == nil {
		return nil
	}
	for i := range code.Threads {
		th := &code.Threads[i]
		if th.Probes >= GILMinProbes && th.GIL() >= GILThreadShare && th.GIL() >= GILOverTraining*max(0, trainingCPU) {
			return th
		}
	}
	return nil
}

// resultWait is the share of the training thread's sampled time whose
// innermost frame is a wait for another thread's result (waitLibs).
func resultWait(code *stage.CodeProfile) float64 {
	var all, waiting float64
	for _, g := range code.Groups {
		if g.Role != stage.RoleTrain {
			continue
		}
		all += float64(g.SampledNs)
		for _, f := range g.Top {
			if waitLibs[f.Lib] {
				waiting += f.Self * float64(g.SampledNs)
			}
		}
	}
	if all == 0 {
		return 0
	}
	return waiting / all
}

// torchPool names the trainer's intra-op threads by what torch reports
// (n = torch.get_num_threads(), the training thread one of them), with
// the busy threads named like the process beyond torch's pool.
func torchPool(p CPUPool, n int) string {
	s := fmt.Sprintf("torch's %s (torch.get_num_threads(), the training thread one of them)", plural(n, "intra-op thread"))
	if extra := p.Busy - (n - 1); extra > 0 {
		s += " + " + plural(extra, "other busy thread")
	}
	return s
}

// moreIntraOp is the training-thread-bound advice to use more intra-op
// threads, with torch's own count where the trainer reports it.
func moreIntraOp(c *HostCPU) string {
	n := c.IntraOpThreads
	if want := int(c.UsableCores); n > 0 && want > n {
		return fmt.Sprintf("more intra-op threads if the ops run on one (torch runs %s, torch.get_num_threads(): torch.set_num_threads(%d) for the %s usable cores; pipetrain --threads)",
			plural(n, "intra-op thread"), want, cores(c.UsableCores))
	}
	return "more intra-op threads if the ops run on one (torch.set_num_threads; pipetrain --threads)"
}
