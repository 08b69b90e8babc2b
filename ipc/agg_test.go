package ipc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
)

// readAll reads frames until want steps came, in steps or agg frames,
// and says how many came each way and in how many frames.
func readAll(t *testing.T, c *Conn, want int64) (raw, agged, aggFrames int64, last int64) {
	t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for raw+agged < want {
		f, err := c.Next()
		if err != nil {
			t.Fatalf("after %d raw and %d aggregated steps: %v", raw, agged, err)
		}
		switch f.Type {
		case TypeSteps:
			raw += int64(len(f.Steps))
			last = max(last, f.Steps[len(f.Steps)-1].Step)
		case TypeAgg:
			agged += f.Agg.Steps
			aggFrames++
			last = max(last, f.Agg.LastStep)
		}
	}
	return raw, agged, aggFrames, last
}

// A viewer that accepts agg frames gets every step once, nearly all of
// them in about one agg frame a second; a viewer of before agg frames
// (its hello lists only progress and stacks) attached at the same time
// gets every step as steps frames.
func TestAggregatesAndStepsToViewersSideBySide(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 10 * time.Millisecond})
	aggs := dialView(t, s.Path(), ViewOptions{Aggregates: true})
	old := dial(t, s.Path())
	waitViewers(t, s, 2)
	const steps = 2500 // 2.5 s at 1,000 steps/s
	type got struct{ raw, agged, frames, last int64 }
	done := make(chan got, 2)
	for _, c := range []*Conn{aggs, old} {
		go func() {
			raw, agged, frames, last := readAll(t, c, steps)
			done <- got{raw, agged, frames, last}
		}()
	}
	for i := range int64(steps) {
		r := record(i)
		s.Publish(&r)
		if i%10 == 9 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.Close() // sends the last aggregate
	a, b := <-done, <-done
	if a.agged == 0 {
		a, b = b, a
	}
	if b.agged != 0 || b.raw != steps || b.last != steps-1 {
		t.Errorf("old viewer: %d raw, %d aggregated steps, last %d; want %d raw", b.raw, b.agged, b.last, steps)
	}
	if a.raw+a.agged != steps || a.last != steps-1 || a.agged < steps/2 || a.frames > 6 {
		t.Errorf("agg viewer: %d raw + %d aggregated steps in %d agg frames, last %d; want all %d once, most in 2-4 frames",
			a.raw, a.agged, a.frames, a.last, steps)
	}
	t.Logf("agg viewer: %d steps raw before its hello was read, %d in %d agg frames", a.raw, a.agged, a.frames)
}

// A stage list change sends the aggregate of the old list first.
func TestAggregateEndsAtStageChange(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 10 * time.Millisecond})
	c := dialView(t, s.Path(), ViewOptions{Aggregates: true})
	waitViewers(t, s, 1)
	time.Sleep(1100 * time.Millisecond) // an aggregate boundary: agg frames are on
	for i := range int64(5) {
		r := record(i)
		s.Publish(&r)
	}
	time.Sleep(50 * time.Millisecond)
	s.SetStages([]string{stage.DataWait, stage.Other})
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var order []string
	for len(order) < 2 {
		f, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == TypeAgg || f.Type == TypeStages || f.Type == TypeSteps {
			order = append(order, f.Type)
		}
		if f.Type == TypeAgg && (f.Agg.Steps != 5 || len(f.Agg.CPU) != len(stage.Canonical)) {
			t.Errorf("aggregate of %d steps, %d stages; want 5 of the old list", f.Agg.Steps, len(f.Agg.CPU))
		}
	}
	if order[0] != TypeAgg || order[1] != TypeStages {
		t.Errorf("frames %v, want the aggregate before the stage list", order)
	}
}

func TestAggFrameRoundTrip(t *testing.T) {
	a := stage.NewAggregator(stage.Canonical)
	for i := range int64(50) {
		r := record(i)
		r.CPU[0] = 3e6 * (i % 3) // data_wait: some reach the floor
		a.Add(&r)
	}
	g := a.Take()
	line := appendJSON(nil, Frame{Type: TypeAgg, Agg: &g})
	f, err := DecodeFrame(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeAggFast(bytes.TrimSuffix(line, []byte("\n"))); err != nil {
		t.Errorf("the compact decoder refuses what the server writes: %v\n%s", err, line)
	}
	if f.Agg.Steps != 50 || len(f.Agg.Waits) != 2*33 || f.Agg.Wall.N != 50 || f.Agg.CPU[0].Sum != g.CPU[0].Sum {
		t.Errorf("decoded %+v from %s", f.Agg, line)
	}
	for _, bad := range []string{
		`{"type":"agg"}`,
		`{"type":"agg","agg":{"steps":0}}`,
		`{"type":"agg","agg":{"steps":1,"wall":{"n":1,"sum":5,"bins":[5]}}}`,
		`{"type":"agg","agg":{"steps":1,"wall":{"n":1,"sum":5,"bins":[5,1]},"waits":[1,10]}}`,
		`{"type":"agg","agg":{"steps":1,"wall":{"n":1,"sum":5,"bins":[5,1]},"cpu":[{"n":1,"sum":3000000,"bins":[1051,1]}],"pauses":[1,1,3000000]}}`,
		`{"type":"agg","agg":{"steps":1,"wall":{"n":1,"sum":5,"bins":[5,1]},"cpu":[{"n":1,"sum":3000000,"bins":[1051,1]}],"pauses":[0,1,10]}}`,
		`{"type":"agg","agg":{"steps":1,"wall":{"n":1,"sum":5,"bins":[5,1]},"cpu":[{"n":1,"sum":3000000,"bins":[1051,1]}],"pauses":[0,1]}}`,
	} {
		if _, err := DecodeFrame([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// BenchmarkDecodeAgg is one agg frame of 1,000 steps of 7 stages with
// GPU times: the compact decoder against encoding/json.
func BenchmarkDecodeAgg(b *testing.B) {
	a := stage.NewAggregator(stage.Canonical)
	for i := range int64(1000) {
		r := record(i)
		for k := range r.NumStages {
			r.CPU[k] = 1e6 + (i*7919+int64(k)*104729)%300_000
			r.GPU[k] = r.CPU[k] / 2
		}
		a.Add(&r)
	}
	g := a.Take()
	line := bytes.TrimSuffix(appendJSON(nil, Frame{Type: TypeAgg, Agg: &g}), []byte("\n"))
	b.Logf("%d bytes", len(line))
	for _, fast := range []bool{true, false} {
		b.Run(map[bool]string{true: "compact", false: "encoding-json"}[fast], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if fast {
					if _, err := decodeAggFast(line); err != nil {
						b.Fatal(err)
					}
				} else if err := json.Unmarshal(line, &Frame{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A viewer that asks for brief aggregates (a rank shown in brief) gets
// each aggregate as the one a viewer in full gets, made brief: the same
// counts, sums and wall bins, no other bins and no waits; and no loader
// frame (it keeps no loader statistics).
func TestBriefAggregates(t *testing.T) {
	s := newServer(t, ServerOptions{Flush: 10 * time.Millisecond})
	full := dialView(t, s.Path(), ViewOptions{Aggregates: true})
	brief := dialView(t, s.Path(), ViewOptions{Aggregates: true, BriefAggregates: true})
	waitViewers(t, s, 2)
	const steps = 1500
	loaders := map[*Conn]int{}
	var mu sync.Mutex
	aggs := func(c *Conn, out chan<- []stage.Aggregate) {
		var got []stage.Aggregate
		c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for n := int64(0); n < steps; {
			f, err := c.Next()
			if err != nil {
				t.Errorf("after %d steps: %v", n, err)
				break
			}
			switch f.Type {
			case TypeSteps:
				n += int64(len(f.Steps))
			case TypeAgg:
				n += f.Agg.Steps
				got = append(got, *f.Agg)
			case TypeLoader:
				mu.Lock()
				loaders[c]++
				mu.Unlock()
			}
		}
		out <- got
	}
	fc, bc := make(chan []stage.Aggregate, 1), make(chan []stage.Aggregate, 1)
	go aggs(full, fc)
	go aggs(brief, bc)
	for i := range int64(steps) {
		r := record(i)
		s.Publish(&r)
		if i%10 == 9 {
			time.Sleep(10 * time.Millisecond)
		}
		if i%500 == 250 { // well after the hellos were read
			s.PublishLoader(stage.LoaderStats{Workers: 2, Batch: 64})
		}
	}
	s.Close()
	fs, bs := <-fc, <-bc
	if loaders[full] == 0 || loaders[brief] > 0 {
		t.Errorf("loader frames: %d to the viewer in full (want some), %d to the one in brief (want none)", loaders[full], loaders[brief])
	}
	byFirst := map[int64]stage.Aggregate{}
	for _, g := range fs {
		if len(g.CPU[0].Bins) == 0 {
			t.Errorf("full aggregate from step %d has no stage bins", g.FirstStep)
		}
		byFirst[g.FirstStep] = g
	}
	same := 0
	for _, g := range bs { // the viewers' first aggregates may differ: each began at the next after its hello
		if f, ok := byFirst[g.FirstStep]; ok {
			same++
			if want := f.Brief(); !reflect.DeepEqual(g, want) {
				t.Errorf("brief aggregate from step %d:\n%+v\nwant\n%+v", g.FirstStep, g, want)
			}
		}
	}
	if same == 0 {
		t.Fatalf("no aggregate in both: %d full, %d brief", len(fs), len(bs))
	}
}
