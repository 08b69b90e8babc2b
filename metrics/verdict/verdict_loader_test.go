package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestLoaderTakesCores plants a CPU-bound network beside DataLoader
// workers that keep up by decoding amplified Zarr chunks on its cores, and
// the controls: a cheap loader (1-frame chunks), idle workers, an input
// that does not keep up, and GPU runs.
func TestLoaderTakesCores(t *testing.T) {
	const start = int64(1e18)
	compute := run(start, 200, func(int) map[string]int64 {
		return map[string]int64{stage.DataWait: ms1 / 2, stage.Forward: 20 * ms1, stage.Backward: 10 * ms1, stage.Optim: ms1}
	}).Summarize(0)
	waiting := run(start, 200, steadyTimes(8*ms1)).Summarize(0) // input-bound by its shares
	onGPU := compute
	onGPU.HasGPU, onGPU.GPUBusy = true, 0.3
	zarr := func(amp float64, chunk int) *stage.LoaderStats {
		return &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.6, Zarr: []stage.ZarrArray{{Store: "/data/pusht.zarr", Path: "data/img",
			Shape: []int{25000, 96, 96, 3}, Chunks: []int{chunk, 96, 96, 3}, DType: "uint8", ItemSize: 1, ZarrFormat: 2,
			ReadAmp: amp, BytesDecoded: int64(amp * 96 * 96 * 3 * 1e4), BytesReturned: 96 * 96 * 3 * 1e4, Calls: 1e4}}}
	}
	busy := func(workers, wait float64) *HostCPU {
		return &HostCPU{UsableCores: 2, Demand: 2.6, Used: 1.95, WaitShare: 0.25, Training: 1, TrainingCPU: 1 - wait, Others: 0.9, IdleCores: 0.05,
			WorkerCores: workers, Pools: []CPUPool{{Role: "training", Processes: 1, Busy: 1}, {Role: "worker", Processes: 2, Busy: 2}}}
	}
	for _, tc := range []struct {
		name     string
		sum      stage.Summary
		loader   *stage.LoaderStats
		cpu      *HostCPU
		want     Kind
		contains []string
	}{
		{"500-frame chunks, workers take a core: named", compute, zarr(250, 500), busy(1.1, 0.3), LoaderTakesCores,
			[]string{"workers take 1.1 of the 1.9 cores the run gets (2 usable) from the network", "250x", "most in forward", "the training thread waited 30 % of its time for a CPU", "rechunk /data/pusht.zarr /data/pusht-rechunked.zarr --chunk-frames 1", "pipetop bisect -- CMD"}},
		// Not blamed for the chunking; but the workers use the network's
		// cores all the same: contention, with cheaper samples (fewer
		// workers would not keep up) and the experiments.
		{"1-frame chunks: not blamed for the chunking, the cores named", compute, zarr(1, 1), busy(1.1, 0.3), Contention,
			[]string{"contention: 2 loader workers use 1.10 of 2 cores beside the network", "the training thread waited 30 %", "cheaper samples", "fewer would not keep up", "pipetop tune -- CMD", "pipetop bisect -- CMD"}},
		{"oversubscribed by the amplified loader: the rechunk first", compute, zarr(250, 500),
			&HostCPU{UsableCores: 2, Demand: 4.4, Used: 2, WaitShare: 0.55, Training: 1, TrainingCPU: 0.5, Others: 1.5, IdleCores: 0, WorkerCores: 1.2},
			LoaderTakesCores, []string{"1.2 of the 2.0 cores", "rechunk"}},
		{"oversubscribed with 1-frame chunks: oversubscribed", compute, zarr(1, 1),
			&HostCPU{UsableCores: 2, Demand: 4.4, Used: 2, WaitShare: 0.55, Training: 1, TrainingCPU: 0.5, Others: 1.5, IdleCores: 0, WorkerCores: 1.2},
			Oversubscribed, nil},
		{"oversubscribed by an amplified loader the step waits for: input-bound with the rechunk", waiting, zarr(250, 500),
			&HostCPU{UsableCores: 2, Demand: 4.4, Used: 2, WaitShare: 0.55, Training: 0.4, TrainingCPU: 0.25, Others: 1.75, IdleCores: 0, WorkerCores: 1.7},
			InputBound, []string{"250", "rechunk /data/pusht.zarr"}},
		{"oversubscribed, waiting for 1-frame chunks: oversubscribed", waiting, zarr(1, 1),
			&HostCPU{UsableCores: 2, Demand: 4.4, Used: 2, WaitShare: 0.55, Training: 0.4, TrainingCPU: 0.25, Others: 1.75, IdleCores: 0, WorkerCores: 1.7},
			Oversubscribed, nil},
		{"idle workers: not blamed", compute, zarr(250, 500), busy(0.15, 0.05), ComputeBound, []string{"input keeps up", "had the run's 2 cores to itself (0.15 used beside it)", "a faster device"}},
		{"no CPU readings: compute-bound", compute, zarr(250, 500), nil, ComputeBound, nil},
		{"the input does not keep up: input-bound says it", waiting, zarr(250, 500), busy(1.1, 0.3), InputBound, []string{"rechunk"}},
		{"a GPU run whose training thread waits for a CPU", onGPU, zarr(250, 500), busy(1.1, 0.3), LoaderTakesCores, []string{"1.1 of the 1.9 cores"}},
		{"a GPU run whose training thread does not wait", onGPU, zarr(250, 500), busy(1.1, 0.02), LaunchBound, nil},
		{"pipetrain's loader at 64x", compute, &stage.LoaderStats{Workers: 2, ReadAmp: 64, Dataset: "/d/demo.zarr"}, busy(0.9, 0.3), LoaderTakesCores,
			[]string{"64x", "pipetrain data rechunk /d/demo.zarr /d/demo-rechunked.zarr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Summary: tc.sum, Loader: tc.loader, Live: true}
			if tc.cpu != nil {
				in.Host = &Host{CPU: tc.cpu}
			}
			v := Judge(in)
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

// TestOversubscribedTrainingWait: the diffusion_policy run (2
// intra-op threads and 2 workers on 2 cores: 3.3 threads wanting a CPU,
// the training thread waiting 45 %) is oversubscribed at 1.65x; the same
// demand with the training thread on a CPU, and a run at 1.1x, are not.
func TestOversubscribedTrainingWait(t *testing.T) {
	const start = int64(1e18)
	compute := run(start, 200, steadyTimes(ms1/2)).Summarize(0)
	pools := []CPUPool{{Role: "training", Processes: 1, Busy: 1}, {Role: "intra-op", Processes: 1, Busy: 1}, {Role: "worker", Processes: 2, Busy: 2}}
	for _, tc := range []struct {
		name     string
		cpu      HostCPU
		want     Kind
		contains []string
	}{
		{"diffusion_policy at 1.65x, training thread waiting 45 %",
			HostCPU{UsableCores: 2, Demand: 3.3, Used: 1.95, WaitShare: 0.42, Training: 1, TrainingCPU: 0.55, Others: 1.4, IdleCores: 0.05, WorkerCores: 0.8, Pools: pools},
			Oversubscribed, []string{"on 2 cores", "waited 42 %", "the training thread 45 %"}},
		// zarr_network.py on 1-frame chunks with 2 intra-op threads, as
		// pipetop read it at the end on a quiet moment of the 2-core box:
		// torch's pool and the BLAS library's overlap in one process.
		{"1.6x from one process's pools: compute",
			HostCPU{UsableCores: 2, Demand: 3.2, Used: 1.85, WaitShare: 0.42, Training: 1, TrainingCPU: 0.61, Others: 1.2, IdleCores: 0.05, WorkerCores: 0.1,
				Pools: []CPUPool{{Role: "training", Processes: 1, Busy: 1}, {Role: "intra-op", Processes: 1, Busy: 2}}},
			ComputeBound, nil},
		{"1.65x, the training thread on a CPU",
			HostCPU{UsableCores: 2, Demand: 3.3, Used: 1.95, WaitShare: 0.42, Training: 1, TrainingCPU: 0.9, Others: 1.05, IdleCores: 0.05, Pools: pools},
			ComputeBound, nil},
		{"1 thread + 1 worker at 1.1x",
			HostCPU{UsableCores: 2, Demand: 2.2, Used: 1.9, WaitShare: 0.14, Training: 1, TrainingCPU: 0.85, Others: 1.05, IdleCores: 0.1, Pools: pools[:1]},
			ComputeBound, nil},
		{"1.65x on a busy host: the run gets 0.4 of 2 cores",
			HostCPU{UsableCores: 2, Demand: 3.3, Used: 0.4, WaitShare: 0.88, Training: 1, TrainingCPU: 0.18, Others: 0.22, IdleCores: 0, Pools: pools},
			ComputeBound, nil},
		{"2x without the training thread's reading",
			HostCPU{UsableCores: 2, Demand: 4.2, Used: 2, WaitShare: 0.5, Training: -1, TrainingCPU: -1, Pools: pools},
			Oversubscribed, []string{"waited 50 % of their time for a CPU — use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(Inputs{Summary: compute, Live: true, Host: &Host{CPU: &tc.cpu}})
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

// TestCPURulesOverAWholeRun: an end-of-run summary's means (Refreshes
// set) are judged without a live trainer; one refresh's readings of a
// trainer that is gone are not.
func TestCPURulesOverAWholeRun(t *testing.T) {
	const start = int64(1e18)
	compute := run(start, 200, steadyTimes(ms1/2)).Summarize(0)
	quota := HostCPU{UsableCores: 0.5, QuotaCPUs: 0.5, ThrottledShare: 0.8, Demand: 2, Used: 0.5, WaitShare: 0.7, Training: -1, TrainingCPU: -1}
	whole := quota
	whole.Refreshes = 30
	if v := Judge(Inputs{Summary: compute, Host: &Host{CPU: &whole}}); v.Kind != Throttled {
		t.Errorf("whole run: %s, want throttled", v)
	}
	if v := Judge(Inputs{Summary: compute, Host: &Host{CPU: &quota}}); v.Kind != ComputeBound {
		t.Errorf("a gone trainer's last refresh: %s, want compute-bound", v)
	}
}
