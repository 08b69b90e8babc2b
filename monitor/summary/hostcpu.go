package summary

import (
	"math"
	"slices"
	"strings"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/sources/threads"
)

// RunCPU is the run's threads and the CPU it could use over the whole
// run: the means of the readings the live CPU rules judge
// (verdict.HostCPU) over the refreshes that had them while the run
// trained. pipetop run keeps them as the run goes on and writes them into
// the run summary (host_cpu); a recording's threads and cpu readings give
// the same means to pipetop summary.
type RunCPU struct {
	// Refreshes is how many readings the means are over.
	Refreshes int `json:"refreshes"`
	// UsableCores is the mean usable cores (affinity capped by the quota);
	// QuotaCPUs the last quota seen (0: none) and ThrottledShare the mean
	// share of its periods in which it ran out.
	UsableCores    float64 `json:"usable_cores"`
	QuotaCPUs      float64 `json:"quota_cpus"`
	ThrottledShare float64 `json:"throttled_share"`
	// Demand is the mean threads wanting a CPU, Used the mean cores used,
	// WaitShare the share of the wanted time spent waiting for a CPU.
	Demand    float64 `json:"demand"`
	Used      float64 `json:"used"`
	WaitShare float64 `json:"wait_share"`
	// Training and TrainingCPU are the mean shares of the time the
	// training thread wanted a CPU and was on one, -1 when never known;
	// Others is the mean cores of the other threads.
	Training    float64 `json:"training"`
	TrainingCPU float64 `json:"training_cpu"`
	Others      float64 `json:"others"`
	// IdleCores is the mean idle cores of the host, -1 when unread.
	IdleCores float64 `json:"idle_cores"`
	// WorkerCores is the mean cores of the loader's worker processes;
	// OtherProcCores of the run's other processes and SideCores of the
	// trainer's threads that are not the network's (what ran beside it).
	WorkerCores    float64 `json:"worker_cores"`
	OtherProcCores float64 `json:"other_proc_cores,omitempty"`
	SideCores      float64 `json:"side_cores,omitempty"`
	// TrainingSwitches and TrainingPreempted are the training thread's
	// mean switches onto a CPU and preemptions a second (the GIL rule);
	// IntraOpThreads the last torch.get_num_threads() seen (0: unknown).
	TrainingSwitches  float64 `json:"training_switches,omitempty"`
	TrainingPreempted float64 `json:"training_preempted,omitempty"`
	IntraOpThreads    int     `json:"intra_op_threads,omitempty"`
	// Pools are the busy threads by role: the mean busy threads and
	// processes (rounded; a role busy on fewer than half the refreshes is
	// left out), over every refresh.
	Pools []RunPool `json:"pools"`
}

// RunPool is one role's busy threads over the run.
type RunPool struct {
	Role      string `json:"role"`
	Processes int    `json:"processes"`
	Busy      int    `json:"busy"`
}

// HostCPU is r as the CPU rules read it: a whole run's means.
func (r *RunCPU) HostCPU() *verdict.HostCPU {
	if r == nil || r.Refreshes == 0 {
		return nil
	}
	c := &verdict.HostCPU{UsableCores: r.UsableCores, QuotaCPUs: r.QuotaCPUs, ThrottledShare: r.ThrottledShare,
		Demand: r.Demand, Used: r.Used, WaitShare: r.WaitShare, Training: r.Training, TrainingCPU: r.TrainingCPU,
		Others: r.Others, IdleCores: r.IdleCores, WorkerCores: r.WorkerCores, OtherProcCores: r.OtherProcCores, SideCores: r.SideCores, Refreshes: r.Refreshes,
		TrainingSwitches: r.TrainingSwitches, TrainingPreempted: r.TrainingPreempted, IntraOpThreads: r.IntraOpThreads}
	for _, p := range r.Pools {
		c.Pools = append(c.Pools, verdict.CPUPool{Role: p.Role, Processes: p.Processes, Busy: p.Busy})
	}
	return c
}

// CPUMeans adds up the CPU readings of a run's refreshes; its zero value
// is ready.
type CPUMeans struct {
	n                                                     int
	usable, quota, throttled, demand, used, wait, workers float64
	otherProcs, side                                      float64
	nTrain                                                int
	train, trainCPU, others, switches, preempted          float64
	intraOp                                               int
	nIdle                                                 int
	idle                                                  float64
	pools                                                 map[string]*RunPool // sums
}

// Add adds one refresh's readings; nil is skipped.
func (m *CPUMeans) Add(c *verdict.HostCPU) {
	if c == nil {
		return
	}
	m.n++
	m.usable += c.UsableCores
	if c.QuotaCPUs > 0 {
		m.quota = c.QuotaCPUs
	}
	m.throttled += c.ThrottledShare
	m.demand += c.Demand
	m.used += c.Used
	m.wait += c.WaitShare * c.Demand
	m.workers += c.WorkerCores
	m.otherProcs += c.OtherProcCores
	m.side += c.SideCores
	if c.Training >= 0 && c.TrainingCPU >= 0 {
		m.nTrain++
		m.train += c.Training
		m.trainCPU += c.TrainingCPU
		m.others += c.Others
		m.switches += c.TrainingSwitches
		m.preempted += c.TrainingPreempted
	}
	if c.IntraOpThreads > 0 {
		m.intraOp = c.IntraOpThreads
	}
	if c.IdleCores >= 0 {
		m.nIdle++
		m.idle += c.IdleCores
	}
	if m.pools == nil {
		m.pools = map[string]*RunPool{}
	}
	for _, p := range c.Pools {
		s := m.pools[p.Role]
		if s == nil {
			s = &RunPool{Role: p.Role}
			m.pools[p.Role] = s
		}
		s.Processes += p.Processes
		s.Busy += p.Busy
	}
}

// AddSnapshot adds the CPU readings of one refresh's snapshot (its threads
// and cpu parts, as the live verdict reads them); one without readings is
// skipped.
func (m *CPUMeans) AddSnapshot(s *snapshot.Snapshot) {
	var h verdict.Host
	threads.Part.FillHost(s, &h)
	m.Add(h.CPU)
}

// Run is the means; nil without a reading.
func (m *CPUMeans) Run() *RunCPU {
	if m.n == 0 {
		return nil
	}
	n := float64(m.n)
	r := &RunCPU{Refreshes: m.n, UsableCores: m.usable / n, QuotaCPUs: m.quota, ThrottledShare: m.throttled / n,
		Demand: m.demand / n, Used: m.used / n, WorkerCores: m.workers / n,
		OtherProcCores: m.otherProcs / n, SideCores: m.side / n, Training: -1, TrainingCPU: -1, IdleCores: -1, Pools: []RunPool{}}
	if m.demand > 0 {
		r.WaitShare = m.wait / m.demand
	}
	if m.nTrain > 0 {
		k := float64(m.nTrain)
		r.Training, r.TrainingCPU, r.Others = m.train/k, m.trainCPU/k, m.others/k
		r.TrainingSwitches, r.TrainingPreempted = m.switches/k, m.preempted/k
	}
	r.IntraOpThreads = m.intraOp
	if m.nIdle > 0 {
		r.IdleCores = m.idle / float64(m.nIdle)
	}
	for _, p := range m.pools {
		if busy := int(math.Round(float64(p.Busy) / n)); busy > 0 {
			r.Pools = append(r.Pools, RunPool{Role: p.Role, Processes: max(1, int(math.Round(float64(p.Processes)/n))), Busy: busy})
		}
	}
	slices.SortFunc(r.Pools, func(a, b RunPool) int { return strings.Compare(a.Role, b.Role) })
	return r
}
