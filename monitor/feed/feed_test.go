package feed

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/judge"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

var names = []string{stage.DataWait, stage.Forward, stage.Other}

func steps(from, n int64, t0 time.Time) *ipc.Frame {
	f := &ipc.Frame{Type: ipc.TypeSteps}
	for i := range n {
		start := t0.Add(time.Duration(from+i) * 10 * time.Millisecond).UnixNano()
		f.Steps = append(f.Steps, stage.RecordOf(from+i, start, start+10e6, 32, []int64{6e6, 3e6, 1e6}, nil))
	}
	return f
}

// fill is one refresh of the feed alone: its parts of the snapshot and the
// verdict on its inputs, without host readings.
func fill(f *Feed, now time.Time) snapshot.Snapshot {
	s := snapshot.Snapshot{Time: now, Window: snapshot.Window{Label: "all"}}
	v := f.View(now, s.Window, false)
	s.Link, s.Trainer, s.Summary, s.Loader, s.Totals, s.Progress, s.Code = v.Link, v.Trainer, v.Summary, v.Loader, v.Totals, v.Progress, v.Code
	if w, ok := v.Window(now.UnixNano()); ok {
		v := judge.Verdict(w)
		s.Verdict = &v
	}
	return s
}

// received is how many steps the feed has received in all.
func received(f *Feed) int64 { return f.View(time.Now(), snapshot.Window{Label: "all"}, true).Steps }

func TestApplyLifecycle(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cfg, _ := json.Marshal(map[string]any{"epoch_steps": 1000})
	hello := &ipc.Hello{Name: "run", PID: 42, StartNs: t0.Add(-time.Minute).UnixNano(), Stages: names, Config: cfg}
	ep := ipc.Endpoint{Path: "/tmp/run.42.sock", Name: "run", PID: 42}
	f := New(1000)

	if s := fill(f, t0); s.Link.State != snapshot.LinkNone || s.Trainer != nil {
		t.Fatalf("fresh feed: link %q trainer %v", s.Link.State, s.Trainer)
	}
	f.Apply(ipc.Message{Connected: hello, Endpoint: ep}, t0)
	f.Apply(ipc.Message{Frame: steps(0, 100, t0), Endpoint: ep}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeLoader, Loader: &stage.LoaderStats{Dataset: "/d/run.zarr", Workers: 3, ReadAmp: 9}}}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeEvent, Event: &ipc.Event{Kind: "checkpoint", Msg: "step 100"}}}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeDrops, Dropped: 7}}, t0)

	s := fill(f, t0.Add(time.Second))
	switch {
	case s.Link.State != snapshot.LinkConnected:
		t.Errorf("link %q, want connected", s.Link.State)
	case s.Summary == nil || s.Summary.Steps != 100:
		t.Fatalf("summary %+v, want 100 steps", s.Summary)
	case s.Verdict == nil || s.Verdict.Kind != verdict.InputBound:
		t.Errorf("verdict %+v, want input-bound", s.Verdict)
	case !strings.Contains(s.Verdict.Next, "rechunk /d/run.zarr /d/run-rechunked.zarr"):
		t.Errorf("verdict advice %q ignores the loader's read amplification or the dataset", s.Verdict.Next)
	case s.Trainer.Dropped != 7 || s.Trainer.LastEvent == nil || s.Trainer.LastEvent.Kind != "checkpoint":
		t.Errorf("trainer %+v: drops or event lost", s.Trainer)
	case s.Trainer.UptimeSec != 61:
		t.Errorf("uptime %v, want 61", s.Trainer.UptimeSec)
	case s.Trainer.EpochSteps != 1000 || s.Trainer.EpochETASec <= 0:
		t.Errorf("epoch steps %d ETA %v", s.Trainer.EpochSteps, s.Trainer.EpochETASec)
	}

	// The trainer goes away: the last state stays.
	f.Apply(ipc.Message{Endpoint: ep, Disconnected: errors.New("EOF")}, t0.Add(2*time.Second))
	s = fill(f, t0.Add(3*time.Second))
	if s.Link.State != snapshot.LinkDisconnected || s.Summary == nil || s.Summary.Steps != 100 {
		t.Errorf("after disconnect: link %q summary %v, want disconnected with 100 steps kept", s.Link.State, s.Summary)
	}
	if s.Trainer.EpochETASec != 0 {
		t.Errorf("a disconnected trainer has an epoch ETA %v", s.Trainer.EpochETASec)
	}

	// The same process reconnects: the window is kept.
	f.Apply(ipc.Message{Connected: hello, Endpoint: ep}, t0.Add(4*time.Second))
	if s = fill(f, t0); s.Summary.Steps != 100 {
		t.Errorf("reconnect to the same process: %d steps, want 100 kept", s.Summary.Steps)
	}

	// A restarted trainer (new pid) starts a fresh window.
	restarted := *hello
	restarted.PID = 43
	f.Apply(ipc.Message{Connected: &restarted, Endpoint: ep}, t0.Add(5*time.Second))
	if s = fill(f, t0); s.Summary != nil || s.Loader != nil || s.Trainer.PID != 43 {
		t.Errorf("restart: summary %v loader %v pid %d, want a fresh state for pid 43", s.Summary, s.Loader, s.Trainer.PID)
	}

	// A new stage list resets the window too.
	f.Apply(ipc.Message{Frame: steps(0, 10, t0)}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeStages, Stages: []string{"read", "step"}}}, t0)
	if s = fill(f, t0); s.Summary != nil || strings.Join(s.Trainer.Stages, ",") != "read,step" {
		t.Errorf("stages frame: summary %v stages %v", s.Summary, s.Trainer.Stages)
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		cfg  string
		want configInfo
	}{
		{``, configInfo{}},
		{`{"epoch_steps": 500}`, configInfo{EpochSteps: 500}},
		{`{"epoch_steps": -3, "kind": "synthetic"}`, configInfo{Kind: "synthetic"}},
		{`{"epoch_steps": "many"}`, configInfo{}},
		{`[1,2]`, configInfo{}},
	}
	for _, tt := range tests {
		if got := parseConfig(json.RawMessage(tt.cfg)); got != tt.want {
			t.Errorf("parseConfig(%s) = %+v, want %+v", tt.cfg, got, tt.want)
		}
	}
}

// TestAttachRealSocket attaches to a real ipc server over a Unix socket,
// loses it, and finds it again when a server with the same name returns.
func TestAttachRealSocket(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	hello := ipc.Hello{Stages: names}
	srv, err := ipc.Listen("feedtest", hello, ipc.ServerOptions{Flush: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := New(1000)
	defer f.Close()
	f.Attach(ctx, "feedtest")
	waitFor(t, "connected", func() bool { return f.Link().State == snapshot.LinkConnected })
	publish(srv, 0, 20)
	waitFor(t, "20 steps", func() bool { return received(f) >= 20 })

	srv.Close()
	waitFor(t, "disconnected", func() bool { return f.Link().State == snapshot.LinkDisconnected })
	if s := fill(f, time.Now()); s.Summary == nil || s.Summary.Steps != 20 {
		t.Errorf("after the trainer left: summary %v, want the 20 steps kept", s.Summary)
	}

	srv2, err := ipc.Listen("feedtest", hello, ipc.ServerOptions{Flush: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	waitFor(t, "reconnected", func() bool { return f.Link().State == snapshot.LinkConnected })
	publish(srv2, 20, 5)
	waitFor(t, "25 steps", func() bool { return received(f) >= 25 })
}

func TestAttachUnknownSays(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := New(10)
	defer f.Close()
	f.Attach(ctx, "ghost")
	waitFor(t, "a resolver message", func() bool { return strings.Contains(f.Link().Detail, `"ghost"`) })
	if s := f.Link().State; s != snapshot.LinkNone {
		t.Errorf("link %q, want none", s)
	}
}

func publish(srv *ipc.Server, from, n int64) {
	for i := range n {
		r := stage.Record{Step: from + i, NumStages: len(names), Samples: 8}
		r.ClearGPU()
		r.EndNs = time.Now().UnixNano()
		r.StartNs = r.EndNs - 10e6
		r.CPU[0], r.CPU[1], r.CPU[2] = 6e6, 3e6, 1e6
		srv.Publish(&r)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPhaseEventRestartsTheWindow: a bisect phase change shows in the
// snapshot and the window holds only the new phase's steps.
func TestPhaseEventRestartsTheWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ep := ipc.Endpoint{Path: "/tmp/b.1.sock", Name: "b", PID: 1}
	f := New(1000)
	f.Apply(ipc.Message{Connected: &ipc.Hello{Name: "b", PID: 1, Stages: names}, Endpoint: ep}, t0)
	f.Apply(ipc.Message{Frame: steps(0, 50, t0), Endpoint: ep}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeEvent, Event: &ipc.Event{Kind: "phase", Msg: "loader (batch 8)"}}, Endpoint: ep}, t0)
	f.Apply(ipc.Message{Frame: steps(50, 20, t0), Endpoint: ep}, t0)
	s := fill(f, t0.Add(time.Second))
	if s.Trainer.Phase != "loader (batch 8)" || s.Summary.Steps != 20 {
		t.Fatalf("phase %q, %d steps in the window; want the loader phase's 20", s.Trainer.Phase, s.Summary.Steps)
	}
}

// TestTotalsLifecycle: the totals count every step of one trainer process
// across reconnections, stage-list changes and bisect phases (which reset
// the window), and start from zero for a new process; the hello's rank,
// world size and run reach the snapshot.
func TestTotalsLifecycle(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	rank := 1
	hello := &ipc.Hello{Name: "r", PID: 7, StartNs: 1, Stages: names, Rank: &rank, WorldSize: 2, Run: "exp1"}
	ep := ipc.Endpoint{Path: "/tmp/r.7.sock", Name: "r", PID: 7}
	f := New(1000)
	if tot, _, _, ok := f.Totals(); ok || tot != nil {
		t.Fatal("totals before any hello")
	}
	f.Apply(ipc.Message{Connected: hello, Endpoint: ep}, t0)
	f.Apply(ipc.Message{Frame: steps(0, 30, t0)}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeEvent, Event: &ipc.Event{Kind: "phase", Msg: "b"}}}, t0)
	f.Apply(ipc.Message{Endpoint: ep, Disconnected: errors.New("EOF")}, t0)
	f.Apply(ipc.Message{Connected: hello, Endpoint: ep}, t0)
	f.Apply(ipc.Message{Frame: steps(30, 10, t0)}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeStages, Stages: []string{stage.Forward, "eval"}}}, t0)
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeSteps, Steps: []stage.Record{
		stage.RecordOf(40, 0, 5e6, 32, []int64{1e6, 4e6}, nil)}}}, t0)

	s := fill(f, t0)
	tot := s.Totals
	if tot == nil || tot.Steps != 41 || tot.Samples != 41*32 || tot.Wall.Count != 41 || tot.DataWait.Count != 40 {
		t.Fatalf("totals %+v, want 41 steps, 40 with data_wait", tot)
	}
	if fw := tot.Stages[1]; fw.Name != stage.Forward || fw.CPUNs != 40*3e6+1e6 {
		t.Errorf("forward total %+v, want %d ns over both stage lists", fw, int64(40*3e6+1e6))
	}
	if s.Trainer.Rank == nil || *s.Trainer.Rank != 1 || s.Trainer.WorldSize != 2 || s.Trainer.Run != "exp1" {
		t.Errorf("trainer rank %v world %d run %q", s.Trainer.Rank, s.Trainer.WorldSize, s.Trainer.Run)
	}
	// The snapshot's totals are a copy: later steps do not change them.
	f.Apply(ipc.Message{Frame: steps(41, 1, t0)}, t0)
	if tot.Steps != 41 {
		t.Error("the snapshot's totals changed after Fill")
	}
	if live, pid, start, ok := f.Totals(); !ok || live.Steps != 42 || pid != 7 || start != 1 {
		t.Errorf("live totals: %d steps, pid %d start %d ok %v", live.Steps, pid, start, ok)
	}

	restarted := *hello
	restarted.PID, restarted.StartNs = 8, 2
	f.Apply(ipc.Message{Connected: &restarted, Endpoint: ep}, t0)
	if s = fill(f, t0); s.Totals.Steps != 0 || s.Totals.Wall.Count != 0 {
		t.Errorf("a new process kept %d steps", s.Totals.Steps)
	}
}

// BenchmarkApplySecond is the feed's work for one second at 1,000
// steps/s: 20 frames of 50 steps of seven stages with GPU times, into the
// window and the totals.
func BenchmarkApplySecond(b *testing.B) {
	names := stage.Canonical
	f := New(0)
	t0 := time.Unix(1_800_000_000, 0)
	f.Apply(ipc.Message{Connected: &ipc.Hello{Name: "bench", PID: 1, Stages: names}}, t0)
	fr := &ipc.Frame{Type: ipc.TypeSteps}
	for j := range 50 {
		end := t0.Add(time.Duration(j) * time.Millisecond).UnixNano()
		fr.Steps = append(fr.Steps, stage.RecordOf(int64(j), end-1e6, end, 64,
			[]int64{5e5, 5e4, 2e5, 1e5, 4e4, 1e4, 5e4}, []int64{-1, 4e4, 1.8e5, 9e4, 3e4, -1, -1}))
	}
	m := ipc.Message{Frame: fr}
	b.ReportAllocs()
	for b.Loop() {
		for range 20 {
			f.Apply(m, t0)
		}
	}
}

// TestFailedLinkIsKeptUntilAConnection: a failed attempt shows as state
// failed with the reason and the time to the next try; another failure
// replaces it; only a connection clears it.
func TestFailedLinkIsKeptUntilAConnection(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ep := ipc.Endpoint{Path: "/tmp/x.7.sock", Name: "x", PID: 7}
	f := New(100)
	why := &ipc.AttachError{Path: ep.Path, Name: "x", PID: 7, Problem: "speaks protocol 2; this pipetop speaks 1", Advice: "upgrade pipetop"}
	f.Apply(ipc.Message{Endpoint: ep, Failed: why, RetryAt: t0.Add(4 * time.Second)}, t0)
	s := fill(f, t0.Add(1500*time.Millisecond))
	want := "trainer x (pid 7, socket /tmp/x.7.sock) speaks protocol 2; this pipetop speaks 1 — upgrade pipetop; next try in 3s"
	if s.Link.State != snapshot.LinkFailed || s.Link.Detail != want || s.Link.Socket != ep.Path || !s.Link.Since.Equal(t0) || s.Trainer != nil {
		t.Fatalf("link %+v, want failed: %q", s.Link, want)
	}
	if s := fill(f, t0.Add(5*time.Second)); !strings.HasSuffix(s.Link.Detail, "; trying again now") {
		t.Fatalf("past the retry time: %q", s.Link.Detail)
	}
	f.Apply(ipc.Message{Endpoint: ep, Failed: errors.New("again"), RetryAt: t0.Add(10 * time.Second)}, t0.Add(6*time.Second))
	if s := fill(f, t0.Add(6*time.Second)); s.Link.Detail != "again; next try in 4s" || !s.Link.Since.Equal(t0) {
		t.Fatalf("second failure: %+v", s.Link)
	}
	closed := New(100)
	closed.Apply(ipc.Message{Endpoint: ep, Failed: errors.New("again"), RetryAt: t0.Add(10 * time.Second)}, t0)
	closed.Close()
	if s := fill(closed, t0.Add(time.Second)); s.Link.State != snapshot.LinkFailed || s.Link.Detail != "again" || !s.Link.RetryAt.IsZero() {
		t.Fatalf("a closed feed promises a next try: %+v", s.Link)
	}
	f.Apply(ipc.Message{Connected: &ipc.Hello{Name: "x", PID: 7, Stages: names}, Endpoint: ep}, t0.Add(7*time.Second))
	if s := fill(f, t0.Add(7*time.Second)); s.Link.State != snapshot.LinkConnected || s.Link.Detail != "" || !s.Link.RetryAt.IsZero() {
		t.Fatalf("after connecting: %+v", s.Link)
	}
}

// Before the first step, the latest progress frame makes the verdict: the
// loop has been in data_wait since the frame says.
func TestProgressJudgesBeforeTheFirstStep(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	f := New(100)
	ep := ipc.Endpoint{Path: "/tmp/run.42.sock", Name: "run", PID: 42}
	f.Apply(ipc.Message{Connected: &ipc.Hello{Name: "run", PID: 42, StartNs: t0.UnixNano(), Stages: names}, Endpoint: ep}, t0)
	p := &stage.Progress{TimeNs: t0.Add(14 * time.Second).UnixNano(), Step: 0, StepStartNs: t0.Add(time.Second).UnixNano(),
		Stage: stage.DataWait, SinceNs: t0.Add(time.Second).UnixNano()}
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeProgress, Progress: p}}, t0)
	s := fill(f, t0.Add(15*time.Second))
	if s.Progress == nil || s.Progress.Stage != stage.DataWait {
		t.Fatalf("progress %+v not kept", s.Progress)
	}
	if s.Verdict == nil || s.Verdict.Kind != verdict.Starting || s.Verdict.Stage != stage.DataWait ||
		!strings.Contains(s.Verdict.Headline, "no step yet after 15 s") || !strings.Contains(s.Verdict.Headline, "in data_wait for 14 s") {
		t.Fatalf("verdict %+v", s.Verdict)
	}
	// Steps that came and stopped 20 s ago are a stall in the progress's stage.
	f.Apply(ipc.Message{Frame: steps(0, 50, t0.Add(20*time.Second))}, t0)
	p.Stage, p.Done, p.Step = "comm", 50, 50
	f.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeProgress, Progress: p}}, t0)
	s = fill(f, t0.Add(45*time.Second))
	if s.Verdict.Kind != verdict.Stalled || s.Verdict.Stage != "comm" {
		t.Fatalf("verdict %+v, want stalled in comm", s.Verdict)
	}
}

// aggOf is the agg frame of the steps of a steps frame.
func aggOf(fr *ipc.Frame) *ipc.Frame {
	a := stage.NewAggregator(names)
	for i := range fr.Steps {
		a.Add(&fr.Steps[i])
	}
	g := a.Take()
	return &ipc.Frame{Type: ipc.TypeAgg, Agg: &g}
}

// A feed that takes agg frames (the steps before them raw) shows what a
// feed of the same steps raw shows: steps, rate, means, totals, verdict.
func TestAggregatesSummarizeAsSteps(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	hello := &ipc.Hello{Name: "run", PID: 42, StartNs: t0.Add(-time.Minute).UnixNano(), Stages: names}
	ep := ipc.Endpoint{Path: "/tmp/run.42.sock", Name: "run", PID: 42}
	raw, agg := New(10000), New(10000)
	for _, f := range []*Feed{raw, agg} {
		f.Apply(ipc.Message{Connected: hello, Endpoint: ep}, t0)
	}
	first := steps(0, 70, t0) // came raw, before the hello was read
	raw.Apply(ipc.Message{Frame: first}, t0)
	agg.Apply(ipc.Message{Frame: first}, t0)
	for from := int64(70); from < 1000; from += 100 { // a second of steps each
		fr := steps(from, 100, t0)
		raw.Apply(ipc.Message{Frame: fr}, t0)
		agg.Apply(ipc.Message{Frame: aggOf(fr)}, t0)
	}
	now := t0.Add(11 * time.Second)
	r, a := fill(raw, now), fill(agg, now)
	if r.Summary == nil || a.Summary == nil {
		t.Fatalf("summaries %v, %v", r.Summary, a.Summary)
	}
	rs, as := r.Summary, a.Summary
	if as.Steps != rs.Steps || as.LastStep != rs.LastStep || as.StepsPerSec != rs.StepsPerSec || as.WallMean != rs.WallMean {
		t.Errorf("from aggregates %+v\nfrom steps %+v", as, rs)
	}
	for k := range rs.Stages {
		if as.Stages[k].Mean != rs.Stages[k].Mean || as.Stages[k].Share != rs.Stages[k].Share {
			t.Errorf("stage %+v, from steps %+v", as.Stages[k], rs.Stages[k])
		}
	}
	if a.Totals.Steps != 1070 || a.Totals.Steps != r.Totals.Steps || received(agg) != received(raw) {
		t.Errorf("totals %d steps, %d received; from steps %d, %d", a.Totals.Steps, received(agg), r.Totals.Steps, received(raw))
	}
	if a.Verdict == nil || r.Verdict == nil || a.Verdict.Kind != r.Verdict.Kind || a.Verdict.Stage != r.Verdict.Stage {
		t.Errorf("verdict %v, from steps %v", a.Verdict, r.Verdict)
	}
	// A new stage list starts both windows afresh.
	agg.Apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeStages, Stages: []string{"read", "step"}}}, now)
	if s := fill(agg, now); s.Summary != nil {
		t.Errorf("after a new stage list: %+v", s.Summary)
	}
}

// A brief feed given the same frames as a full one has the same brief
// summary, link and progress, and keeps no totals, baseline, loader or
// stack samples.
func TestBriefFeed(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	hello := &ipc.Hello{Name: "run", PID: 42, StartNs: t0.Add(-time.Minute).UnixNano(), Stages: names}
	ep := ipc.Endpoint{Path: "/tmp/run.42.sock", Name: "run", PID: 42}
	full, brief := New(10000), NewBrief(10000)
	apply := func(m ipc.Message) {
		full.Apply(m, t0)
		brief.Apply(m, t0)
	}
	apply(ipc.Message{Connected: hello, Endpoint: ep})
	apply(ipc.Message{Frame: steps(0, 70, t0)}) // came raw, before the hello was read
	for from := int64(70); from < 1000; from += 100 {
		apply(ipc.Message{Frame: aggOf(steps(from, 100, t0))})
	}
	apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeLoader, Loader: &stage.LoaderStats{Workers: 3}}})
	apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeProgress, Progress: &stage.Progress{Step: 1000, Done: 1000}}})
	apply(ipc.Message{Frame: &ipc.Frame{Type: ipc.TypeStacks, Stacks: &stage.StackSamples{Frames: []stage.CodeFrame{{Name: "f"}},
		Rows: []stage.StackRow{{Role: "train", Stage: stage.Forward, Stack: []int{0}, N: 1, Ns: 1}}}}})
	now := t0.Add(11 * time.Second)
	for _, w := range []snapshot.Window{{Label: "5s", Seconds: 5}, {Label: "all"}} {
		fb, bb := full.View(now, w, true), brief.View(now, w, true)
		if !reflect.DeepEqual(fb, bb) {
			t.Errorf("window %s: brief of the full feed\n%+v\nof the brief one\n%+v", w.Label, fb, bb)
		}
		if bb.Summary == nil || bb.Summary.Steps == 0 || bb.Progress == nil || bb.PID != 42 {
			t.Errorf("window %s: brief %+v", w.Label, bb)
		}
	}
	s := fill(brief, now)
	if s.Totals != nil || s.Loader != nil || s.Code != nil || s.Summary == nil || s.Summary.Waits != nil {
		t.Errorf("a brief feed's parts: totals %v loader %v code %v summary %+v", s.Totals, s.Loader, s.Code, s.Summary)
	}
	if _, _, _, ok := brief.Totals(); ok {
		t.Error("a brief feed offers totals")
	}
	if f := fill(full, now); f.Totals == nil || f.Loader == nil || f.Code == nil {
		t.Errorf("the full feed lacks a part: totals %v loader %v code %v", f.Totals, f.Loader, f.Code)
	}
	if received(brief) != received(full) {
		t.Errorf("a brief feed received %d steps, the full one %d", received(brief), received(full))
	}
}
