package pypublish_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
)

// aggRecords are steps with known, unknown and comm GPU times, waits
// above and below the floor, and losses.
func aggRecords() []stage.Record {
	var recs []stage.Record
	t := int64(1_800_000_000e9)
	for i := range int64(300) {
		cpu := []int64{i * 97_001 % 9_000_000, 3_000_000 + i*1_013, 5_000_000 + i*7, 1_000 * (i % 5), i % 25 * 200_000} // other reaches the pause floor on some steps
		gpu := []int64{-1, 2_900_000 + i, -1, 900 * (i % 5), -1}
		if i%3 == 0 {
			gpu = nil
		}
		var wall int64
		for _, c := range cpu {
			wall += c
		}
		r := stage.RecordOf(i, t, t+wall, 32, cpu, gpu)
		if i%40 == 0 {
			r.HasLoss, r.Loss = true, float32(i)/7
		}
		recs = append(recs, r)
		t += wall
	}
	return recs
}

// The Python aggregator and the Go one make the same aggregate of the
// same steps: the same counts, sums, bins and waits; and the same brief
// one (stage.Aggregate.Brief), for a viewer that asks for it.
func TestPythonAggregateMatchesGo(t *testing.T) {
	names := []string{stage.DataWait, stage.Forward, stage.Backward, stage.Comm, stage.Other}
	recs := aggRecords()
	a := stage.NewAggregator(names)
	type pyRec struct {
		Step, T0, T1 int64
		N            int32
		Loss         *float32
		CPU, GPU     []int64
	}
	var in []pyRec
	for i := range recs {
		r := &recs[i]
		a.Add(r)
		p := pyRec{Step: r.Step, T0: r.StartNs, T1: r.EndNs, N: r.Samples, CPU: r.CPU[:r.NumStages]}
		if r.HasGPU() {
			p.GPU = r.GPU[:r.NumStages]
		}
		if r.HasLoss {
			p.Loss = &r.Loss
		}
		in = append(in, p)
	}
	want := a.Take()
	script := `
import json, sys
from pipetop_publish.aggregate import Aggregator
names, recs = json.load(sys.stdin)
a = Aggregator(tuple(names))
for r in recs:
    a.add((r["Step"], r["T0"], r["T1"], r["N"], r["Loss"], tuple(r["CPU"]), tuple(r["GPU"]) if r["GPU"] else None, tuple(names)))
full, brief = a.take_forms(True, True)
sys.stdout.buffer.write(full + brief)
`
	body, _ := json.Marshal([]any{names, in})
	cmd := exec.Command(python, "-c", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(testkit.Root(t), "clients", "python"))
	cmd.Stdin = strings.NewReader(string(body))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python aggregator: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("python printed %d frames, want the full and the brief one:\n%s", len(lines), out)
	}
	for i, w := range []stage.Aggregate{want, want.Brief()} {
		line := []byte(lines[i])
		f, err := ipc.DecodeFrame(line)
		if err != nil {
			t.Fatalf("the Python agg frame: %v\n%s", err, line)
		}
		if !ipc.Compact(line) {
			t.Errorf("the Python agg frame is not in the compact form Go writes:\n%s", line)
		}
		got := *f.Agg
		if got.Loss == nil || w.Loss == nil || math.Abs(float64(got.Loss.Value-w.Loss.Value)) > 1e-6 {
			t.Errorf("loss %+v, Go says %+v", got.Loss, w.Loss)
		}
		got.Loss, w.Loss = nil, nil
		if !reflect.DeepEqual(got, w) {
			g, _ := json.Marshal(got)
			ww, _ := json.Marshal(w)
			t.Errorf("Python aggregate (brief: %v)\n%s\nGo aggregate\n%s", i == 1, g, ww)
		}
	}
}

// A Go viewer that asks for agg frames from the real PyTorch loop gets
// every step once, and summarizes them as a viewer of the steps does.
func TestPythonLoopServesAggregates(t *testing.T) {
	requireTorch(t)
	dir := testkit.SocketDir(t)
	const steps = 800
	l := startLoop(t, dir, "--steps", strconv.Itoa(steps), "--name", "py-agg", "--wait-viewers", "2", "--stats")
	ep := l.endpoint(t, dir, "py-agg")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	aggConn, err := ipc.DialView(ctx, ep.Path, ipc.ViewOptions{Aggregates: true})
	if err != nil {
		t.Fatal(err)
	}
	defer aggConn.Close()
	type aggView struct {
		raw    *stage.StepRing
		aggs   *stage.AggRing
		frames int
		err    error
	}
	done := make(chan aggView)
	go func() {
		v := aggView{raw: stage.NewStepRing(stage.Canonical, steps), aggs: stage.NewAggRing(stage.Canonical, 256)}
		for {
			f, err := aggConn.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					v.err = err
				}
				done <- v
				return
			}
			switch f.Type {
			case ipc.TypeSteps:
				for i := range f.Steps {
					v.raw.Add(&f.Steps[i])
				}
			case ipc.TypeAgg:
				v.aggs.Add(*f.Agg)
				v.frames++
			}
		}
	}()
	got := readAll(t, dial(t, ep.Path))
	l.wait(t)
	v := <-done
	if v.err != nil {
		t.Fatal(v.err)
	}
	if len(got.steps) != steps {
		t.Fatalf("the steps viewer got %d steps, want %d", len(got.steps), steps)
	}
	if v.frames == 0 {
		t.Fatalf("the agg viewer got no agg frame (%d steps raw)", v.raw.Len())
	}
	want := got.window.Summarize(0)
	sum := mergedSummary(v.raw, v.aggs)
	t.Logf("agg viewer: %d steps raw, %d in %d agg frames", v.raw.Len(), sum.Steps-v.raw.Len(), v.frames)
	if sum.Steps != steps || sum.LastStep != want.LastStep {
		t.Fatalf("agg viewer summarized %d steps up to %d; want %d up to %d", sum.Steps, sum.LastStep, steps, want.LastStep)
	}
	if math.Abs(sum.WallMean-want.WallMean) > 1e-9*want.WallMean || math.Abs(sum.WallP50-want.WallP50) > want.WallP50/128 {
		t.Errorf("wall mean %v p50 %v; from the steps %v %v", sum.WallMean, sum.WallP50, want.WallMean, want.WallP50)
	}
	for k, st := range want.Stages {
		if g := sum.Stages[k]; math.Abs(g.Mean-st.Mean) > 1e-9*st.Mean+1e-9 {
			t.Errorf("%s mean %v, from the steps %v", st.Name, g.Mean, st.Mean)
		}
	}
}

// mergedSummary summarizes what an agg viewer holds: the steps that came
// raw, as one aggregate, then the aggregates.
func mergedSummary(raw *stage.StepRing, aggs *stage.AggRing) stage.Summary {
	all := stage.NewAggRing(stage.Canonical, aggs.Len()+1)
	if raw.Len() > 0 {
		all.Add(raw.Aggregate())
	}
	aggs.Each(func(g *stage.Aggregate) { all.Add(*g) })
	return all.Summarize(0)
}
