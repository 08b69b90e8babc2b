package sources

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

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
		CPU:             snapshot.CPU{Total: v(42), Cores: []snapshot.Reading{v(40), v(44)}},
		GPU:             snapshot.GPU{Driver: "1.2", Devices: []snapshot.Device{{Index: 0, MIGIndex: -1, Name: "gpu", SMActivity: v(63), Throttle: []string{}}}},
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
