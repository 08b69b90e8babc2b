package export

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// TestGPUProcessTopN: only GPUProcessTopN per-process series, and a count
// for every GPU, however many processes run.
func TestGPUProcessTopN(t *testing.T) {
	v := func(x float64) snapshot.Reading { return snapshot.Reading{Value: &x, State: "ok"} }
	var s snapshot.Snapshot
	for i := range 8 {
		s.GPU.Devices = append(s.GPU.Devices, snapshot.Device{Index: i})
	}
	for i := range 25 {
		p := snapshot.GPUProcess{GPU: i % 8, MIGIndex: -1, HostPID: 100 + i, Comm: "p", GPUMem: v(float64(1000 - i)), SM: v(10)}
		if i%8 == 5 {
			p.SM = snapshot.Reading{State: "not supported"}
		}
		s.GPUProcesses = append(s.GPUProcesses, p)
	}
	ch := make(chan prometheus.Metric, 100)
	gpuProcMetrics{}.Emit(&s, Emitter{Ch: ch})
	close(ch)
	counts := map[string]int{}
	for m := range ch {
		counts[m.Desc().String()]++
	}
	mem, sm, count := counts[memDesc.String()], counts[smDesc.String()], counts[countDesc.String()]
	// SM: the top 10 but the one on GPU 5, whose SM the driver refused.
	if mem != GPUProcessTopN || sm != GPUProcessTopN-1 || count != 8 {
		t.Errorf("series: memory %d, SM %d, count %d; want %d, %d, 8", mem, sm, count, GPUProcessTopN, GPUProcessTopN-1)
	}
	dch := make(chan *prometheus.Desc, 10)
	gpuProcMetrics{}.Describe(dch)
	if len(dch) != 3 {
		t.Errorf("Describe sent %d descriptors, want 3", len(dch))
	}
}
