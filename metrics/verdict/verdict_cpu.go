package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// HostCPU is the run's threads over the last refresh and the CPU it may
// use, as the CPU rules read them (filled from the threads source).
type HostCPU struct {
	// UsableCores is the CPUs the run may use: its affinity mask capped by
	// its cgroup quota. Every CPU verdict counts these, not the host's.
	UsableCores float64
	// QuotaCPUs is the cgroup quota in CPUs (0: none) and ThrottledShare
	// the share of its periods since the previous refresh in which it ran
	// out.
	QuotaCPUs, ThrottledShare float64
	// Demand is how many of the run's threads wanted a CPU on average (on
	// one or waiting for one); Used how many cores they used.
	Demand, Used float64
	// WaitShare is the share of the time the run's threads wanted a CPU
	// that they spent waiting for one (run-queue delay).
	WaitShare float64
	// Pools are the run's busy threads by role.
	Pools []CPUPool
	// Training is the share of the time the training thread wanted a
	// CPU (on one or waiting: 0..1), TrainingCPU the share it was on one;
	// both -1 when the hello named none. Others is the cores the run's
	// other threads used.
	Training, TrainingCPU, Others float64
	// TrainingSwitches is how many times a second the training thread was
	// switched onto a CPU and TrainingPreempted how many times it was
	// preempted: the rest are voluntary (it blocked); both -1 when the
	// hello named no training thread (0 from readers that keep neither).
	TrainingSwitches, TrainingPreempted float64
	// IntraOpThreads is torch.get_num_threads() in the trainer process
	// (the training thread counts as one), from its stacks frames; 0 when
	// unknown.
	IntraOpThreads int
	// IdleCores is how many of the host's cores were idle (whoever else
	// uses them); -1 when unread.
	IdleCores float64
	// WorkerCores is the cores the loader's worker processes used (every
	// thread of the trainer's child processes: the decoding library's
	// threads too).
	WorkerCores float64
	// OtherProcCores is the cores the run's other processes used (neither
	// the trainer process nor its loader workers: a launcher, a
	// subprocess); SideCores the cores of the trainer's threads that are
	// not the network's (pin-memory and other roles, not the training
	// thread, its intra-op pool nor its comm threads). With WorkerCores
	// they are what ran beside the network (besideNetwork).
	OtherProcCores, SideCores float64
	// Refreshes is how many refreshes of a whole run these readings are
	// the means of (an end-of-run summary's); 0 for one live refresh. The
	// CPU rules read a live refresh or a whole run's means, never the last
	// refresh of a trainer that is gone.
	Refreshes int
}

// CPUPool is the busy threads of one role.
type CPUPool struct {
	Role string
	// Processes is how many processes have busy threads of the role and
	// Busy how many such threads there are in all.
	Processes, Busy int
}

// Thresholds of the CPU rules.
const (
	ThrottledPeriods   = 0.25 // the quota ran out in at least this share of periods: throttled
	OversubDemand      = 2.0  // threads wanting a CPU at least this many times the usable cores ...
	OversubWait        = 0.25 // ... that waited at least this share of the time for one: oversubscribed
	OversubTrainDemand = 1.5  // or threads wanting a CPU at least this many times the usable cores ...
	OversubTrainWait   = 0.30 // ... and the training thread waited at least this share of the time it wanted one (and OversubWait) ...
	OversubUsed        = 0.80 // ... while the run's threads used at least this share of the usable cores (a busy host is not the run's oversubscription)
	OversubPoolDemand  = 1.35 // or, with a busy intra-op pool beside busy loader workers, threads wanting at least this many times the usable cores ...
	OversubPoolWait    = 0.20 // ... and the training thread waiting at least this share of the time it wanted a CPU (and OversubWait, OversubUsed)
	TrainingThreadBusy = 0.90 // the training thread wanting a CPU (on one or waiting) at least this share of the time ...
	OtherThreadsIdle   = 0.15 // ... while the rest of the run uses at most this share of the training thread's CPU
	IdleCoresFree      = 0.25 // ... and at least this many of the host's cores are idle: other threads could help
)

// throttledRule: the cgroup quota holds the run back.
func throttledRule(in *Inputs) (Verdict, bool) {
	c := hostCPU(in)
	if c == nil || c.QuotaCPUs <= 0 || c.ThrottledShare < ThrottledPeriods {
		return Verdict{}, false
	}
	return Verdict{Kind: Throttled,
		Headline: fmt.Sprintf("throttled: the cgroup's CPU quota of %.1f CPUs ran out in %s of its periods; the run's threads want %.1f CPUs (%s)",
			c.QuotaCPUs, units.Pct(c.ThrottledShare), c.Demand, pools(c)),
		Next: fmt.Sprintf("keep the threads within the quota (torch.set_num_threads(%d), OMP_NUM_THREADS=1 in loader workers, fewer --threads/--workers) or raise the limit (cpu.max, the pod's resources.limits.cpu)",
			max(1, int(c.QuotaCPUs)))}, true
}

// oversubscribedRule: more threads want a CPU than the run has cores, and
// they wait for one: twice the cores, or 1.5 times with the training
// thread itself waiting for a CPU while the run fills the cores and its
// loader workers take a share of them, or 1.35 times when an intra-op
// pool runs beside busy loader workers (poolShort); not when the step
// waits for amplified input (amplifiedInput) (when other processes take the
// cores, every thread of the run waits longer and wants a CPU longer: that
// is the host's load; one process whose torch and BLAS pools overlap wants
// about 1.5x on its own and is compute, not oversubscription).
func oversubscribedRule(in *Inputs) (Verdict, bool) {
	c := hostCPU(in)
	if c == nil || c.UsableCores <= 0 || c.WaitShare < OversubWait || amplifiedInput(in) {
		return Verdict{}, false
	}
	tw := trainingWait(c)
	over := c.Demand >= OversubDemand*c.UsableCores ||
		(c.Demand >= OversubTrainDemand*c.UsableCores && tw >= OversubTrainWait && c.Used >= OversubUsed*c.UsableCores &&
			c.WorkerCores >= LoaderCores*c.Used) ||
		poolShort(c, tw)
	if !over {
		return Verdict{}, false
	}
	head := fmt.Sprintf("oversubscribed: %s on %s cores; threads waited %s of their time for a CPU",
		pools(c), cores(c.UsableCores), units.Pct(c.WaitShare))
	if tw >= 0 {
		head += fmt.Sprintf(", the training thread %s", units.Pct(tw))
	}
	return Verdict{Kind: Oversubscribed, Headline: head,
		Next: fmt.Sprintf("use at most %s compute threads in all: torch.set_num_threads in the main process, OMP_NUM_THREADS=1 (torch.set_num_threads(1) in worker_init_fn) in loader workers; pipetrain: lower --threads and --workers",
			cores(c.UsableCores))}, true
}

// amplifiedInput reports whether the step waits for input (InputShare)
// from loader workers that decode amplified chunks: their threads are the
// ones that want the cores, fewer compute threads would only slow the
// input further, and the input-bound verdict names the rechunk.
func amplifiedInput(in *Inputs) bool {
	l := in.Loader
	if l == nil || l.Workers == 0 {
		return false
	}
	if st := in.Summary.Stage(stage.DataWait); st == nil || st.Share < InputShare {
		return false
	}
	_, _, ok := rechunkFix(l)
	return ok
}

// poolShort reports whether an intra-op pool and busy loader workers
// together want more cores than the run has, with the training thread
// waiting for one: each parallel region of the pool then waits for its
// thread that has no core, so the step slows by more than the wait shows
// (2 intra-op threads and 2 busy workers on 2 cores: 2.8 threads wanting,
// the training thread waiting 27 %, 35 steps/s against 75 with 1 thread).
func poolShort(c *HostCPU, tw float64) bool {
	return c.Demand >= OversubPoolDemand*c.UsableCores && tw >= OversubPoolWait && c.Used >= OversubUsed*c.UsableCores &&
		busyPool(c, "intra-op") && busyPool(c, "worker")
}

// busyPool reports whether c has a busy thread of role.
func busyPool(c *HostCPU, role string) bool {
	return slices.ContainsFunc(c.Pools, func(p CPUPool) bool { return p.Role == role && p.Busy > 0 })
}

// trainingWait is the share of the time the training thread wanted a CPU
// that it waited for one (its run-queue delay); -1 when unknown.
func trainingWait(c *HostCPU) float64 {
	if c.Training <= 0 || c.TrainingCPU < 0 {
		return -1
	}
	return max(0, c.Training-c.TrainingCPU) / c.Training
}

// trainingThreadRule: the training thread is on a CPU nearly all the time
// while the rest of the run idles, the input keeps up and a GPU (if any)
// waits: the step is bound by one thread's host work.
func trainingThreadRule(in *Inputs) (Verdict, bool) {
	c := hostCPU(in)
	if c == nil || c.Training < TrainingThreadBusy || c.UsableCores < 2 || c.Others > OtherThreadsIdle*c.TrainingCPU ||
		c.IdleCores < IdleCoresFree {
		return Verdict{}, false
	}
	s := in.Summary
	if st := s.Stage(stage.DataWait); st != nil && st.Share >= ModerateShare {
		return Verdict{}, false
	}
	if st := s.Stage(stage.Other); st != nil && st.Share >= OtherShare {
		return Verdict{}, false // untimed work: that rule names its code, which threads cannot split
	}
	g := gpuOf(s, in.Host)
	if g.known && g.busy >= LaunchGPUBusy {
		return Verdict{}, false
	}
	name, sh := largestStage(s)
	head := fmt.Sprintf("training-thread-bound: the training thread wanted a CPU %s of the time (on one %s) while the other threads use %.1f of %s cores and %.1f cores of the host idle",
		units.Pct(c.Training), units.Pct(c.TrainingCPU), c.Others, cores(c.UsableCores), c.IdleCores)
	if name != "" {
		head += fmt.Sprintf("; %s takes %s of the step", name, units.Pct(sh))
	}
	next := "the step is one thread's work while cores idle: " + moreIntraOp(c) + ", else a larger batch, fewer and larger ops, vectorised code instead of Python loops"
	if g.known {
		next = fmt.Sprintf("the GPU is busy only %s: the step is one thread's host work (Python, op dispatch, kernel launches): a larger batch, fewer small ops, CUDA graphs or torch.compile", units.Pct(g.busy))
	}
	return Verdict{Kind: TrainingThreadBound, Stage: name, Headline: head, Next: next}, true
}

// largestStage is the window's stage with the largest share.
func largestStage(s stage.Summary) (string, float64) {
	var name string
	var best float64
	for _, st := range s.Stages {
		if st.Share > best {
			name, best = st.Name, st.Share
		}
	}
	return name, best
}

// hostCPU is the CPU readings the rules judge: a live refresh's, or a
// whole run's means; nil otherwise.
func hostCPU(in *Inputs) *HostCPU {
	if in.Host == nil || in.Host.CPU == nil || (!in.Live && in.Host.CPU.Refreshes == 0) {
		return nil
	}
	return in.Host.CPU
}

// pools names the busy threads by role, biggest pool first: "3 processes
// × 2 intra-op threads + 2 workers".
func pools(c *HostCPU) string {
	ps := slices.Clone(c.Pools)
	slices.SortStableFunc(ps, func(a, b CPUPool) int { return b.Busy - a.Busy })
	var parts []string
	for _, p := range ps {
		if p.Busy == 0 {
			continue
		}
		switch {
		case p.Role == "intra-op" && p.Processes <= 1 && c.IntraOpThreads > 0:
			parts = append(parts, torchPool(p, c.IntraOpThreads))
		case p.Role == "worker":
			parts = append(parts, plural(p.Busy, "busy loader worker"))
		case p.Processes > 1:
			each := "threads"
			if p.Busy == p.Processes {
				each = "thread"
			}
			parts = append(parts, fmt.Sprintf("%d processes × %.3g %s %s", p.Processes, float64(p.Busy)/float64(p.Processes), p.Role, each))
		default:
			parts = append(parts, plural(p.Busy, p.Role+" thread"))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%.1f threads wanting a CPU", c.Demand)
	}
	return strings.Join(parts, " + ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// cores formats a core count: whole numbers without decimals.
func cores(n float64) string {
	if n == float64(int(n)) {
		return fmt.Sprintf("%d", int(n))
	}
	return fmt.Sprintf("%.1f", n)
}
