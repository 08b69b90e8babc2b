package trace

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

func planted(steps int) rectest.Run {
	ms := time.Millisecond
	return rectest.Run{Name: "trace", PID: 77, Start: time.Unix(1_800_000_000, 0), Steps: steps,
		Stages: []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Other},
		Means:  []time.Duration{3 * ms, ms / 2, 6 * ms, 4 * ms, ms / 4},
		GPU:    []time.Duration{0, ms / 3, 5 * ms, 3 * ms, 0}, Jitter: 0.3, Seed: 3, Batch: 4, Host: 50 * ms}
}

type file struct {
	TraceEvents []Event `json:"traceEvents"`
}

// traceOf writes the trace of es and reads it back as JSON.
func traceOf(t *testing.T, es []recording.Entry) file {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, es); err != nil {
		t.Fatal(err)
	}
	var f file
	if err := json.Unmarshal(b.Bytes(), &f); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	return f
}

// TestStructure: every stage slice lies inside its step slice, and a
// step's stage slices add up to its wall time within 1 %.
func TestStructure(t *testing.T) {
	f := traceOf(t, planted(400).Entries())
	var step *Event
	var sum float64
	steps, counters := 0, 0
	check := func() {
		if step != nil && math.Abs(sum-*step.Dur) > 0.01**step.Dur {
			t.Fatalf("%s: stages add up to %.1f µs, wall %.1f µs", step.Name, sum, *step.Dur)
		}
	}
	for i := range f.TraceEvents {
		e := &f.TraceEvents[i]
		switch {
		case e.Cat == "step":
			check()
			step, sum = e, 0
			steps++
		case e.Cat == "stage":
			if step == nil || e.Ts < step.Ts-0.001 || e.Ts+*e.Dur > step.Ts+*step.Dur+0.001 || e.TID != step.TID {
				t.Fatalf("stage slice %+v outside its step %+v", e, step)
			}
			sum += *e.Dur
		case e.Cat == "gpu":
			if e.TID != tidGPU || e.Ts < step.Ts-0.001 || e.Ts+*e.Dur > step.Ts+*step.Dur+0.001 {
				t.Fatalf("gpu slice %+v outside its step", e)
			}
		case e.Ph == "C":
			counters++
		}
	}
	check()
	if steps != 400 || counters == 0 {
		t.Fatalf("%d steps, %d counter events", steps, counters)
	}
}

func TestGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, planted(3).Entries()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden.json")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("trace differs from %s (rerun with -update after checking):\n%s", path, b.String())
	}
}

// TestLoaderCounters: the loader's statistics become counters, with a
// track per worker when the loader measures each one.
func TestLoaderCounters(t *testing.T) {
	run := planted(3)
	es := run.Entries()
	at := run.Start.Add(5 * time.Millisecond)
	ls := &stage.LoaderStats{TimeNs: at.UnixNano(), Source: "torch", Workers: 2, WorkerBusy: 0.74,
		WorkerBusyEach: []float64{0.98, 0.5}, QueueDepth: 1, QueueCap: 4}
	es = append(es, recording.Entry{T: at, Frame: &ipc.Frame{Type: ipc.TypeLoader, Loader: ls}})
	f := traceOf(t, es)
	want := map[string]map[string]float64{
		"loader queue":         {"ready batches": 1, "capacity": 4},
		"loader workers busy":  {"mean %": 74},
		"loader worker 0 busy": {"%": 98},
		"loader worker 1 busy": {"%": 50},
	}
	for _, e := range f.TraceEvents {
		w, ok := want[e.Name]
		if !ok || e.Ph != "C" {
			continue
		}
		for k, v := range w {
			if got, _ := e.Args[k].(float64); math.Abs(got-v) > 1e-9 {
				t.Errorf("%s %s = %v, want %v", e.Name, k, e.Args[k], v)
			}
		}
		if e.PID != run.PID || math.Abs(e.Ts-5000) > 1e-6 {
			t.Errorf("%s at pid %d ts %v µs, want pid %d at 5000 µs", e.Name, e.PID, e.Ts, run.PID)
		}
		delete(want, e.Name)
	}
	for name := range want {
		t.Errorf("no %q counter", name)
	}
}

// TestRanksHaveTheirOwnProcesses: each rank of a recorded run is its own
// process, whatever its real pid, and the host counters stay on the lowest
// rank's process however the ranks' hellos are ordered.
func TestRanksHaveTheirOwnProcesses(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	hello := func(r int, at time.Duration) recording.Entry {
		return recording.Entry{T: t0.Add(at), Rank: &r, Hello: &ipc.Hello{Name: "job", PID: 9, Rank: &r, WorldSize: 2, Stages: []string{stage.Forward}}}
	}
	steps := func(r int, at time.Duration) recording.Entry {
		rec := stage.RecordOf(1, t0.Add(at).UnixNano(), t0.Add(at+time.Millisecond).UnixNano(), 4, []int64{1e6}, nil)
		return recording.Entry{T: t0.Add(at + time.Millisecond), Rank: &r, Frame: &ipc.Frame{Type: ipc.TypeSteps, Steps: []stage.Record{rec}}}
	}
	busy := 40.0
	cpu, _ := json.Marshal(snapshot.CPU{Total: snapshot.Reading{Value: &busy, State: "ok"}})
	host := recording.Entry{T: t0.Add(5 * time.Millisecond), Host: recording.Host{"cpu": cpu}}
	es := []recording.Entry{hello(1, 0), hello(0, time.Millisecond), steps(0, 2*time.Millisecond), steps(1, 2*time.Millisecond),
		hello(1, 3*time.Millisecond), host}
	f := traceOf(t, es)
	names, stepsOf, counters := map[int]string{}, map[int]int{}, map[int]int{}
	for _, e := range f.TraceEvents {
		switch {
		case e.Name == "process_name":
			names[e.PID], _ = e.Args["name"].(string)
		case e.Cat == "step":
			stepsOf[e.PID]++
		case e.Name == "CPU busy":
			counters[e.PID]++
		}
	}
	r0, r1 := rankPID(0), rankPID(1)
	if names[r0] != "rank 0: job (pid 9)" || names[r1] != "rank 1: job (pid 9)" || stepsOf[r0] != 1 || stepsOf[r1] != 1 {
		t.Fatalf("processes %v with steps %v", names, stepsOf)
	}
	if counters[r0] != 1 || len(counters) != 1 {
		t.Errorf("host counters by process %v, want on rank 0's (%d)", counters, r0)
	}
}
