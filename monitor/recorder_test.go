package monitor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/source"
)

// TestRecorderWritesTheRun records both ranks of a run for a set duration:
// the header names the source and this host, and the recording holds both
// ranks' hellos and steps.
func TestRecorderWritesTheRun(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	rankServer(t, 0, "", false)
	rankServer(t, 1, "", false)
	ctx := context.Background()
	m, err := Open(ctx, "t", Options{NoWatch: true, Sources: []source.Source{}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.pipetop")
	rec, err := StartRecorder(ctx, m, RecordOptions{Path: path, Source: "t", Interval: 20 * time.Millisecond, Duration: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Wait(); err != nil {
		t.Fatal(err)
	}
	h, es, err := recording.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if h.Source != "t" || h.Host != host || h.StartNs == 0 {
		t.Errorf("header %+v", h)
	}
	hellos, steps := map[int]bool{}, map[int]bool{}
	for _, e := range es {
		switch {
		case e.Hello != nil && e.Rank != nil:
			hellos[*e.Rank] = true
		case e.Frame != nil && e.Frame.Type == ipc.TypeSteps && e.Rank != nil:
			steps[*e.Rank] = true
		}
	}
	if len(hellos) != 2 || len(steps) != 2 {
		t.Errorf("recorded hellos of ranks %v, steps of ranks %v; want both ranks'", hellos, steps)
	}
}

// TestRecorderStopAndCreateError: Stop ends a recording at once; a
// recording that cannot be created is an error, and the monitor is closed.
func TestRecorderStopAndCreateError(t *testing.T) {
	t.Setenv(ipc.DirEnv, t.TempDir())
	ctx := context.Background()
	m, err := Open(ctx, "", Options{NoWatch: true, Sources: []source.Source{}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := StartRecorder(ctx, m, RecordOptions{Path: filepath.Join(t.TempDir(), "r.pipetop"), Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	m, err = Open(ctx, "", Options{NoWatch: true, Sources: []source.Source{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StartRecorder(ctx, m, RecordOptions{Path: filepath.Join(t.TempDir(), "no", "such", "dir", "r.pipetop"), Interval: time.Second}); err == nil {
		t.Error("a recording in a missing directory started")
	}
}
