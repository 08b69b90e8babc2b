package sources

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/host"
)

// names are the names of parts, in their order.
func names[P source.Part](parts []P) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.Name()
	}
	return out
}

// closeAll closes srcs.
func closeAll(srcs []source.Source) {
	for _, src := range srcs {
		src.Close()
	}
}

// TestSamplingOrder: the table samples today's sources under today's
// names in today's order, those that need no NVML first; a new source
// joins it without changing this test. Parts lists the same sources in the
// same order as Registered.
func TestSamplingOrder(t *testing.T) {
	today := []string{"cpu", "process", "threads", "gpu", "gpu_processes"}
	known := map[string]bool{}
	for _, n := range today {
		known[n] = true
	}
	var got []string
	for _, n := range names(Parts()) {
		if known[n] {
			got = append(got, n)
		}
	}
	if !reflect.DeepEqual(got, today) {
		t.Errorf("today's sources sample in the order %v, want %v", got, today)
	}
	srcs := Registered(false)
	defer closeAll(srcs)
	if !reflect.DeepEqual(names(srcs), names(Parts())) {
		t.Errorf("Registered samples %v, Parts lists %v", names(srcs), names(Parts()))
	}
	if hn := names(host.Parts()); !reflect.DeepEqual(names(Parts())[:len(hn)], hn) {
		t.Errorf("the table %v does not start with the sources that need no NVML %v", names(Parts()), hn)
	}
}

// TestPipetrainRecordsEverySourceWithoutNVML: every source Registered
// opens without NVML is one pipetrain --record samples (package host).
func TestPipetrainRecordsEverySourceWithoutNVML(t *testing.T) {
	srcs, hosts := Registered(true), host.Open()
	defer closeAll(srcs)
	defer closeAll(hosts)
	if !reflect.DeepEqual(names(srcs), names(hosts)) {
		t.Errorf("without NVML pipetop samples %v, pipetrain records %v", names(srcs), names(hosts))
	}
}

// TestEverySourceHasAPart: a registered source whose part replay cannot
// load would be recorded and never shown again.
func TestEverySourceHasAPart(t *testing.T) {
	parts := map[string]bool{}
	for _, p := range Parts() {
		parts[p.Name()] = true
	}
	for _, src := range Registered(false) {
		if !parts[src.Name()] {
			t.Errorf("source %s is not in Parts", src.Name())
		}
		src.Close()
	}
}

// TestReadingsRoundTrip: what the sources save, every source loads back,
// whatever the source (the GPU processes too), through a recording's JSON.
func TestReadingsRoundTrip(t *testing.T) {
	v := func(x float64) snapshot.Reading { return snapshot.Reading{Value: &x, Source: "test", State: "ok"} }
	in := snapshot.Snapshot{
		CPU: snapshot.CPU{Total: v(42), Cores: []snapshot.Reading{v(40), v(44)}},
		GPU: snapshot.GPU{Driver: "1.2", Devices: []snapshot.Device{{Index: 0, MIGIndex: -1, Name: "gpu",
			Readings: [gpumetric.N]snapshot.Reading{gpumetric.SMActivity: v(63)}, Throttle: []string{}}}},
		Process:         &snapshot.Process{Alive: true, Self: snapshot.Proc{PID: 7, Comm: "train", CPU: v(99)}, Children: []snapshot.Proc{}},
		GPUProcesses:    []snapshot.GPUProcess{{GPU: 0, MIGIndex: -1, PID: 7, HostPID: 7, Command: "python train.py", GPUMem: v(1 << 30), Trainer: true}},
		GPUProcessNotes: []string{"the driver hides the GPU memory of 1 process(es)"},
	}
	h, err := monitor.SaveReadings(&in, Parts())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(h)
	var back recording.Host
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var out snapshot.Snapshot
	if err := monitor.LoadReadings(back, &out, Parts()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in  %+v\n out %+v", in, out)
	}
	back["from-a-newer-pipetop"] = json.RawMessage(`{"x":1}`)
	back["cpu"] = json.RawMessage(`"not a cpu"`)
	var bad snapshot.Snapshot
	if err := monitor.LoadReadings(back, &bad, Parts()); err == nil || !reflect.DeepEqual(bad.GPU, in.GPU) {
		t.Fatalf("a bad part: err %v, the other parts %+v", err, bad.GPU)
	}
}
