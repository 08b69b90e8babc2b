// Package rectest makes recordings for tests: a trainer with planted stage
// times, as the entries a viewer would have recorded. The steps are made
// up (SYNTHETIC); the recording code that writes and reads them is real.
package rectest

import (
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Run describes a planted run.
type Run struct {
	Name   string
	PID    int
	Start  time.Time
	Steps  int
	Stages []string        // in order; the last should be stage.Other
	Means  []time.Duration // planted mean per stage
	GPU    []time.Duration // planted GPU time per stage (nil: none)
	Jitter float64         // each stage time varies by up to ±Jitter of its mean
	// Wobble scales every stretch of 50 steps by one factor of up to
	// ±Wobble, as a machine's speed drifts; 0: none.
	Wobble float64
	Seed   uint64
	Batch  int           // steps per frame (default 10)
	Host   time.Duration // host readings every Host (default 1 s)
}

// Entries returns the run as recorded entries: hello, steps frames as they
// would arrive, host readings.
func (r Run) Entries() []recording.Entry {
	if r.Batch <= 0 {
		r.Batch = 10
	}
	if r.Host <= 0 {
		r.Host = time.Second
	}
	rng := rand.New(rand.NewPCG(r.Seed, 1))
	hello := &ipc.Hello{Role: "trainer", Name: r.Name, PID: r.PID, StartNs: r.Start.UnixNano(), Stages: r.Stages}
	es := []recording.Entry{{T: r.Start, Hello: hello, Socket: "/tmp/pipetop-test/" + ipc.SocketName(r.Name, r.PID)}}
	at, nextHost := r.Start.UnixNano(), r.Start
	var batch []stage.Record
	scale := 1.0
	for i := range r.Steps {
		if r.Wobble > 0 && i%50 == 0 {
			scale = 1 + r.Wobble*(2*rng.Float64()-1)
		}
		cpu := make([]int64, len(r.Stages))
		var wall int64
		for k, m := range r.Means {
			j := scale * (1 + r.Jitter*(2*rng.Float64()-1))
			cpu[k] = int64(float64(m) * j)
			wall += cpu[k]
		}
		var gpu []int64
		for _, g := range r.GPU {
			gpu = append(gpu, int64(g))
		}
		rec := stage.RecordOf(int64(i), at, at+wall, 64, cpu, gpu)
		rec.HasLoss, rec.Loss = true, 1/float32(i+1)
		at += wall
		batch = append(batch, rec)
		end := time.Unix(0, at)
		if len(batch) == r.Batch || i == r.Steps-1 {
			es = append(es, recording.Entry{T: end, Frame: &ipc.Frame{Type: ipc.TypeSteps, Steps: batch}})
			batch = nil
		}
		for !nextHost.After(end) {
			es = append(es, recording.Entry{T: nextHost, Host: host(nextHost)})
			nextHost = nextHost.Add(r.Host)
		}
	}
	return es
}

// host is a made-up machine reading: the cpu and gpu sources' parts.
func host(t time.Time) recording.Host {
	v := func(x float64) snapshot.Reading {
		return snapshot.Reading{Value: &x, Source: "/proc/stat", State: "ok"}
	}
	busy := float64(t.Unix()%50) + 25
	cpu := snapshot.CPU{Total: v(busy), Cores: []snapshot.Reading{v(busy)}}
	gpu := snapshot.GPU{Devices: []snapshot.Device{{Index: 0, MIGIndex: -1, Name: "test GPU",
		Readings: [gpumetric.N]snapshot.Reading{gpumetric.SMActivity: v(busy / 2), gpumetric.KernelActive: v(busy), gpumetric.MemUsed: v(8 << 30)},
		Throttle: []string{}}}}
	return recording.Host{"cpu": marshal(cpu), "gpu": marshal(gpu)}
}

// marshal is v as JSON; the snapshot's types always encode.
func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Write writes entries as a recording at path.
func Write(path string, es []recording.Entry) error {
	w, err := recording.Create(path, recording.Header{StartNs: es[0].T.UnixNano(), Source: "test"})
	if err != nil {
		return err
	}
	for _, e := range es {
		w.Entry(e)
	}
	return w.Close()
}
