package export

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// GPUProcessTopN bounds the per-process series the exporter serves: the N
// processes with the most GPU memory.
const GPUProcessTopN = 10

// gpuProcMetrics are the gpu_processes source's metrics.
type gpuProcMetrics struct{}

var (
	procLabels = []string{"gpu", "mig", "pid", "user", "comm"}
	memDesc    = prometheus.NewDesc("pipetop_gpu_process_memory_used_bytes",
		fmt.Sprintf("Device memory used by a process; only the %d processes using the most are served.", GPUProcessTopN), procLabels, nil)
	smDesc = prometheus.NewDesc("pipetop_gpu_process_sm_activity_ratio",
		fmt.Sprintf("A process's SM activity (NVML process utilization), for the %d processes using the most memory.", GPUProcessTopN), procLabels, nil)
	countDesc = prometheus.NewDesc("pipetop_gpu_processes",
		"How many processes NVML lists on a GPU (all of them, not only the ones served).", []string{"gpu"}, nil)
)

// Describe implements SourceMetrics.
func (gpuProcMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- memDesc
	ch <- smDesc
	ch <- countDesc
}

// Emit implements SourceMetrics: the GPUProcessTopN processes by GPU memory (the
// snapshot's order) and a count per GPU, so cardinality stays bounded on
// a box with hundreds of GPU processes.
func (gpuProcMetrics) Emit(snap *snapshot.Snapshot, e Emitter) {
	counts := map[int]int{}
	for _, d := range snap.GPU.Devices {
		if !d.MIG {
			counts[d.Index] = 0
		}
	}
	for i, p := range snap.GPUProcesses {
		counts[p.GPU]++
		if i >= GPUProcessTopN {
			continue
		}
		mig := ""
		if p.MIGIndex >= 0 {
			mig = Itoa(p.MIGIndex)
		}
		labels := []string{Itoa(p.GPU), mig, Itoa(p.HostPID), p.User, p.Comm}
		if p.GPUMem.OK() {
			e.Gauge(memDesc, *p.GPUMem.Value, labels...)
		}
		if p.SM.OK() {
			e.Gauge(smDesc, Ratio(*p.SM.Value), labels...)
		}
	}
	for gpu, n := range counts {
		e.Gauge(countDesc, float64(n), Itoa(gpu))
	}
}
