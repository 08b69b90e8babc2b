package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestCPURules plants each CPU finding in the host readings over a
// window whose shares alone would say input-bound or compute-bound, and
// checks that healthy full-core runs keep their stage verdict.
func TestCPURules(t *testing.T) {
	const start = int64(1e18)
	steady := run(start, 200, steadyTimes(8*ms1)).Summarize(0)  // input-bound by its shares
	healthy := run(start, 200, steadyTimes(ms1/2)).Summarize(0) // compute-bound
	pyLoop := run(start, 200, func(int) map[string]int64 {
		return map[string]int64{stage.DataWait: ms1 / 10, stage.Forward: 20 * ms1, stage.Optim: ms1}
	}).Summarize(0)
	logging := run(start, 200, func(int) map[string]int64 {
		return map[string]int64{stage.Forward: 5 * ms1, stage.Other: 15 * ms1}
	}).Summarize(0)
	six := []CPUPool{{Role: "intra-op", Processes: 3, Busy: 3}, {Role: "main", Processes: 1, Busy: 1}, {Role: "worker", Processes: 2, Busy: 2}}
	for _, tc := range []struct {
		name     string
		sum      stage.Summary
		cpu      HostCPU
		gpu      float64 // NVML activity, 0: no GPU
		want     Kind
		contains []string
	}{
		{"oversubscribed: six compute threads on 2 cores", steady,
			HostCPU{UsableCores: 2, Demand: 5.8, Used: 2, WaitShare: 0.65, Pools: six, Training: -1},
			0, Oversubscribed, []string{"3 processes × 1 intra-op thread +", "2 busy loader workers", "on 2 cores", "waited 65 %", "torch.set_num_threads", "OMP_NUM_THREADS=1", "--threads"}},
		// threads.py --threads 2 --workers 2 --worker-threads 1 on 2 cores
		// (OMP_NUM_THREADS=1), the end-of-run means: 35 steps/s against 75
		// with --threads 1.
		{"oversubscribed: a 2-thread pool beside 2 busy workers on 2 cores", pyLoop,
			HostCPU{UsableCores: 2, Demand: 2.83, Used: 1.81, WaitShare: 0.36, Training: 0.975, TrainingCPU: 0.71, Others: 1.1, WorkerCores: 0.44,
				Pools: []CPUPool{{Role: "intra-op", Processes: 1, Busy: 1}, {Role: "training", Processes: 1, Busy: 1}, {Role: "worker", Processes: 2, Busy: 2}}},
			0, Oversubscribed, []string{"2 busy loader workers", "waited 36 %", "the training thread 27 %", "torch.set_num_threads"}},
		// zarr_network.py on 1-frame chunks (2 intra-op threads, 2 workers
		// decoding cheaply), as read at the end of its run: the pool gets
		// its cores, not oversubscribed; but the workers use 14 % of them:
		// contention, not "a faster device".
		{"a 2-thread pool beside cheap workers is not oversubscribed", pyLoop,
			HostCPU{UsableCores: 2, Demand: 2.45, Used: 1.85, WaitShare: 0.24, Training: 0.97, TrainingCPU: 0.88, Others: 0.97, WorkerCores: 0.28,
				Pools: []CPUPool{{Role: "intra-op", Processes: 1, Busy: 1}, {Role: "training", Processes: 1, Busy: 1}, {Role: "worker", Processes: 1, Busy: 1}}},
			0, Contention, []string{"the run's worker processes use 0.28 of 2 cores beside the network"}},
		{"the same pool and workers on a host that waits, the training thread not", pyLoop,
			HostCPU{UsableCores: 2, Demand: 2.83, Used: 1.81, WaitShare: 0.36, Training: 0.97, TrainingCPU: 0.85, Others: 1.1, WorkerCores: 0.44,
				Pools: []CPUPool{{Role: "intra-op", Processes: 1, Busy: 1}, {Role: "training", Processes: 1, Busy: 1}, {Role: "worker", Processes: 2, Busy: 2}}},
			0, Contention, []string{"0.44 of 2 cores beside the network"}},
		{"throttled wins over oversubscribed", steady,
			HostCPU{UsableCores: 0.5, QuotaCPUs: 0.5, ThrottledShare: 0.9, Demand: 3, Used: 0.5, WaitShare: 0.8, Pools: six, Training: -1},
			0, Throttled, []string{"quota of 0.5 CPUs", "90 % of its periods", "want 3.0 CPUs", "raise the limit"}},
		{"training-thread-bound on a CPU", pyLoop,
			HostCPU{UsableCores: 2, Demand: 1.05, Used: 1.0, WaitShare: 0.05, Training: 0.98, TrainingCPU: 0.93, IdleCores: 0.95,
				Pools: []CPUPool{{Role: "training", Processes: 1, Busy: 1}}},
			0, TrainingThreadBound, []string{"wanted a CPU 98 % of the time (on one 93 %)", "0.9 cores of the host idle", "forward takes", "vectorised"}},
		{"a busy training thread in untimed work is untimed: threads cannot split it", logging,
			HostCPU{UsableCores: 2, Demand: 1.02, Used: 1.0, WaitShare: 0.02, Training: 0.98, TrainingCPU: 0.98, IdleCores: 0.9},
			0, Untimed, []string{"untimed"}},
		{"training-thread-bound on an idle GPU", pyLoop,
			HostCPU{UsableCores: 8, Demand: 1.05, Used: 1.0, WaitShare: 0.05, Training: 0.97, TrainingCPU: 0.97, IdleCores: 6.8},
			0.2, TrainingThreadBound, []string{"GPU is busy only 20 %", "CUDA graphs"}},
		{"healthy: threads = cores, no waiting", healthy,
			HostCPU{UsableCores: 2, Demand: 2, Used: 1.95, WaitShare: 0.02, Training: 0.98, TrainingCPU: 0.97, Others: 0.98,
				Pools: []CPUPool{{Role: "intra-op", Processes: 1, Busy: 1}, {Role: "training", Processes: 1, Busy: 1}}},
			0, ComputeBound, []string{"the input keeps up"}},
		{"healthy on a busy host: waiting but not over the cores", healthy,
			HostCPU{UsableCores: 2, Demand: 2, Used: 1.2, WaitShare: 0.4, Training: 1, TrainingCPU: 0.6, Others: 0.6},
			0, ComputeBound, []string{"the input keeps up"}},
		{"a quota that does not bite", healthy,
			HostCPU{UsableCores: 4, QuotaCPUs: 4, ThrottledShare: 0.05, Demand: 2, Used: 2, Training: 0.99, TrainingCPU: 0.99, Others: 1},
			0, ComputeBound, []string{"the input keeps up"}},
		// Rank 0 of pipetrain --nproc 2 --threads 1 on 2 cores, as pipetop
		// read it: one busy thread, but the other rank fills the other
		// core, so no other thread could help: not the training thread's
		// fault.
		{"a busy training thread on a full host is compute", pyLoop,
			HostCPU{UsableCores: 2, Demand: 1, Used: 0.95, WaitShare: 0.05, Training: 0.95, TrainingCPU: 0.86, Others: 0.1, IdleCores: 0.02,
				Pools: []CPUPool{{Role: "training", Processes: 1, Busy: 1}}},
			0, ComputeBound, []string{"forward"}},
		// pipetrain's demo on 2 cores, as pipetop read it: libtorch's forward
		// runs on the training thread and one pool thread, the pool thread
		// 40 % busy. The compute is parallel, only not perfectly: compute.
		{"the demo: a busy training thread with a partly busy pool is compute", pyLoop,
			HostCPU{UsableCores: 2, Demand: 1.45, Used: 1.42, WaitShare: 0.02, Training: 1, TrainingCPU: 1, Others: 0.4, IdleCores: 0.56,
				Pools: []CPUPool{{Role: "training", Processes: 1, Busy: 1}, {Role: "intra-op", Processes: 1, Busy: 1}}},
			0, ComputeBound, []string{"forward"}},
		{"a busy training thread with busy intra-op threads is compute", pyLoop,
			HostCPU{UsableCores: 4, Demand: 3.9, Used: 3.9, WaitShare: 0.01, Training: 0.99, TrainingCPU: 0.99, Others: 2.9},
			0, ComputeBound, []string{"forward"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Host{CPU: &tc.cpu}
			if tc.gpu > 0 {
				h.GPUActivity, h.GPUActivitySource = tc.gpu, "kernel-active"
			}
			v := Judge(Inputs{Summary: tc.sum, Live: true, Host: h})
			if v.Kind != tc.want {
				t.Fatalf("kind = %s (%s), want %s", v.Kind, v, tc.want)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
		})
	}
}
