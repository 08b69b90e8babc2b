package replay

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/recording/rectest"
)

func planted() rectest.Run {
	ms := time.Millisecond
	return rectest.Run{Name: "replay", PID: 5, Start: time.Unix(1_800_000_000, 0), Steps: 2000,
		Stages: []string{stage.DataWait, stage.Forward, stage.Backward, stage.Other},
		Means:  []time.Duration{4 * ms, 3 * ms, 2 * ms, ms / 2}, Jitter: 0.4, Seed: 9}
}

// TestReplayMatchesLive: at any moment, the replay's summary and verdict
// are what a live viewer that received the same frames showed then.
func TestReplayMatchesLive(t *testing.T) {
	es := planted().Entries()
	path := filepath.Join(t.TempDir(), "run.pipetop")
	if err := rectest.Write(path, es); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p.SetPaused(true)
	w := monitor.Windows[0]
	for _, at := range []time.Duration{3 * time.Second, 11 * time.Second, 6 * time.Second, p.Length()} {
		moment := p.Start().Add(at)
		live := feed.New(0)
		for _, e := range es {
			if e.T.After(moment) {
				break
			}
			if msg, ok := monitor.Messages(e); ok {
				live.Apply(msg, e.T)
			}
		}
		want := monitor.NewSnapshotter(live).Snapshot(moment, w)
		p.SeekTo(moment)
		got := p.Snapshot(w)
		if !reflect.DeepEqual(got.Summary, want.Summary) || !reflect.DeepEqual(got.Verdict, want.Verdict) {
			t.Fatalf("at %v:\nreplay %+v\n  live %+v", at, got.Summary, want.Summary)
		}
		if got.Replay == nil || got.Replay.AtSec != at.Seconds() || got.CPU.Total.Value == nil {
			t.Fatalf("at %v: replay state %+v, cpu %+v", at, got.Replay, got.CPU.Total)
		}
	}
}

func TestClockAndSpeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.pipetop")
	if err := rectest.Write(path, planted().Entries()); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p.SetSpeed(+3) // 8x
	start := p.Now()
	time.Sleep(50 * time.Millisecond)
	if d := p.Now().Sub(start); d < 300*time.Millisecond {
		t.Errorf("8x for 50 ms moved %v", d)
	}
	p.SetPaused(true)
	at := p.Now()
	time.Sleep(20 * time.Millisecond)
	if p.Now() != at {
		t.Error("paused clock moved")
	}
	p.Seek(time.Hour)
	if !p.Now().Equal(p.End()) {
		t.Errorf("seek past the end: %v, want %v", p.Now(), p.End())
	}
	p.Seek(-time.Hour)
	if !p.Now().Equal(p.Start()) {
		t.Errorf("seek before the start: %v", p.Now())
	}
}
