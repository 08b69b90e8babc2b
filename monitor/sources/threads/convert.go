package threads

import (
	"slices"
	"strings"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// FillHost implements source.HostFiller: the run's threads and the CPU it
// may use, for the CPU rules.
func (part) FillHost(s *snapshot.Snapshot, h *verdict.Host) { h.CPU = hostCPU(s.Threads, &s.CPU) }

// hostCPU sums the threads source's part (and the host's per-core
// readings, for its idle cores) for the CPU rules; nil without it or
// before the threads' second reading.
func hostCPU(t *snapshot.Threads, cpu *snapshot.CPU) *verdict.HostCPU {
	if t == nil {
		return nil
	}
	t = runThreads(t)
	c := &verdict.HostCPU{UsableCores: t.UsableCores, QuotaCPUs: t.Quota.CPUs, ThrottledShare: t.Quota.ThrottledShare,
		Training: -1, TrainingCPU: -1, IdleCores: idleCores(cpu), TrainingSwitches: -1, TrainingPreempted: -1}
	var run, wait float64
	fresh := 0
	for _, th := range t.Threads {
		if th.Fresh {
			fresh++
			continue
		}
		run += th.CPU / 100
		wait += th.Wait / 100
		if th.Role == "training" {
			c.Training, c.TrainingCPU = min(1, (th.CPU+th.Wait)/100), th.CPU/100
			c.TrainingSwitches, c.TrainingPreempted = th.Switches, th.Preempted
		}
	}
	if fresh == len(t.Threads) {
		return nil
	}
	c.Used, c.Demand = run, run+wait
	if c.TrainingCPU >= 0 {
		c.Others = max(0, run-c.TrainingCPU)
	}
	if c.Demand > 0 {
		c.WaitShare = wait / c.Demand
	}
	for role, r := range t.ByRole() {
		if r.Busy > 0 {
			c.Pools = append(c.Pools, verdict.CPUPool{Role: role, Processes: busyProcesses(t, role), Busy: r.Busy})
		}
	}
	slices.SortFunc(c.Pools, func(a, b verdict.CPUPool) int { return strings.Compare(a.Role, b.Role) })
	c.WorkerCores = workerCores(t)
	c.OtherProcCores, c.SideCores = besideCores(t)
	return c
}

// besideCores is the cores used beside the network by the run's processes
// that are neither the trainer process nor its loader workers, and by the
// trainer's threads whose role is not the network's (pin-memory, other).
// The trainer process is the one of the training (or main) thread.
func besideCores(t *snapshot.Threads) (otherProcs, side float64) {
	trainer, workers := 0, map[int]bool{}
	for _, th := range t.Threads {
		switch th.Role {
		case host.RoleTraining:
			trainer = th.PID
		case host.RoleMain:
			if trainer == 0 {
				trainer = th.PID
			}
		case host.RoleWorker:
			workers[th.PID] = true
		}
	}
	if trainer == 0 {
		return 0, 0 // which threads are the network's is unknown
	}
	for _, th := range t.Threads {
		switch {
		case th.Fresh || workers[th.PID]:
		case th.PID != trainer:
			otherProcs += th.CPU / 100
		case th.Role == host.RolePinMemory || th.Role == host.RoleOther:
			side += th.CPU / 100
		}
	}
	return otherProcs, side
}

// runThreads is t without pipetop's own threads (role pipetop): they are
// never the run's.
func runThreads(t *snapshot.Threads) *snapshot.Threads {
	if !slices.ContainsFunc(t.Threads, isPipetop) {
		return t
	}
	run := *t
	run.Threads = slices.DeleteFunc(slices.Clone(t.Threads), isPipetop)
	return &run
}

func isPipetop(th host.ThreadInfo) bool { return th.Role == host.RolePipetop }

// workerCores is the cores used by the loader's worker processes: every
// thread of a process whose first thread is a worker (the trainer's
// children), the decoding library's threads included.
func workerCores(t *snapshot.Threads) float64 {
	workers := map[int]bool{}
	for _, th := range t.Threads {
		if th.Role == "worker" {
			workers[th.PID] = true
		}
	}
	var sum float64
	for _, th := range t.Threads {
		if workers[th.PID] && !th.Fresh {
			sum += th.CPU / 100
		}
	}
	return sum
}

// busyProcesses counts the processes with busy threads of role.
func busyProcesses(t *snapshot.Threads, role string) int {
	pids := map[int]bool{}
	for _, th := range t.Threads {
		if th.Role == role && th.CPU+th.Wait >= snapshot.BusyThread {
			pids[th.PID] = true
		}
	}
	return len(pids)
}

// idleCores is how many cores of the host were idle over the last
// refresh (each core's idle share summed), -1 without per-core readings.
func idleCores(cpu *snapshot.CPU) float64 {
	idle, read := 0.0, false
	for _, r := range cpu.Cores {
		if r.Value != nil {
			idle += max(0, 100-*r.Value) / 100
			read = true
		}
	}
	if !read {
		return -1
	}
	return idle
}
