package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources"
)

// counted is a source that counts its samples.
type counted struct {
	source.Source
	n *atomic.Int64
}

func (c counted) Sample(now time.Time, t source.Target) error {
	c.n.Add(1)
	return c.Source.Sample(now, t)
}

func (c counted) FillHost(s *snapshot.Snapshot, h *verdict.Host) {
	if hf, ok := c.Source.(source.HostFiller); ok {
		hf.FillHost(s, h)
	}
}

// countingSources are the registered sources (the GPU's too: without
// NVML they sample and fail), each counting its samples by name.
func countingSources(counts map[string]*atomic.Int64) func() []source.Source {
	return func() []source.Source {
		srcs := sources.Registered(false)
		for i, s := range srcs {
			n := &atomic.Int64{}
			counts[s.Name()] = n
			srcs[i] = counted{s, n}
		}
		return srcs
	}
}

// fakeScreen refreshes its monitor every interval, as the live view does,
// until ctx ends; it counts its refreshes and every refresh the monitor
// made while it was up, and the sources' samples then.
type fakeScreen struct {
	interval          time.Duration
	counts            map[string]*atomic.Int64
	mu                sync.Mutex
	own, all          int
	samplesBefore     map[string]int64
	samplesDuring     map[string]int64
	judgedTrainerSeen bool
}

func (f *fakeScreen) show(ctx context.Context, m *monitor.Monitor) error {
	f.mu.Lock()
	f.samplesBefore = map[string]int64{}
	for name, n := range f.counts {
		f.samplesBefore[name] = n.Load()
	}
	f.mu.Unlock()
	cancel := m.Snapshotter.Subscribe(func(r *monitor.Refresh) {
		f.mu.Lock()
		f.all++
		if r.Judged && r.Snapshot.Trainer != nil {
			f.judgedTrainerSeen = true
		}
		f.mu.Unlock()
	})
	defer cancel()
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			f.mu.Lock()
			f.samplesDuring = map[string]int64{}
			for name, n := range f.counts {
				f.samplesDuring[name] = n.Load() - f.samplesBefore[name]
			}
			f.mu.Unlock()
			return nil
		case now := <-t.C:
			m.Snapshot(now, monitor.Windows[0])
			f.mu.Lock()
			f.own++
			f.mu.Unlock()
		}
	}
}

// lockedBuffer is a bytes.Buffer that pipetop's goroutines may write to
// at once, as they do to stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// viewers reads the publisher's counters that PIPETOP_STATS_FILE got at
// its exit: how many viewers each process accepted, by pid.
func viewers(t *testing.T, path string) map[int]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the publisher wrote no counters: %v", err)
	}
	defer f.Close()
	out := map[int]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct{ PID, Accepted int }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("counters line %q: %v", sc.Text(), err)
		}
		out[line.PID] = line.Accepted
	}
	return out
}

// TestOneMonitorPerTrainer runs a publishing script the way pipetop run
// does with a terminal and --record: the live view, the recording and the
// keeper share one monitor. The trainer accepts one viewer in its whole
// life, and every source samples once a refresh: while the screen is up
// the recorder and the keeper sample nothing of their own.
func TestOneMonitorPerTrainer(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	stats := filepath.Join(dir, "stats.jsonl")
	t.Setenv(ipc.DirEnv, filepath.Join(dir, "sockets"))
	t.Setenv("PIPETOP_CACHE_DIR", filepath.Join(dir, "cache"))
	t.Setenv("PIPETOP_STATS_FILE", stats)
	env, err := Env("")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]*atomic.Int64{}
	screen := &fakeScreen{interval: 200 * time.Millisecond, counts: counts}
	rec := filepath.Join(dir, "run.pipetop")
	var stdout, stderr lockedBuffer
	status, err := Run(context.Background(), Config{Argv: []string{python, "testdata/steps.py", "3"}, Env: env,
		Terminal: true, Show: screen.show, Refresh: screen.interval, Record: rec, Sources: countingSources(counts),
		SummaryDir: dir, Stdout: &stdout, Stderr: &stderr})
	if err != nil || status != 0 {
		t.Fatalf("run: status %d, %v\n%s", status, err, &stderr)
	}
	if got := viewers(t, stats); len(got) != 1 {
		t.Errorf("publishers' viewers by pid %v, want one process", got)
	} else {
		for pid, n := range got {
			if n != 1 {
				t.Errorf("the trainer (pid %d) accepted %d viewers, want 1: the screen, the recording and the keeper share one connection", pid, n)
			}
		}
	}
	if screen.own < 5 || !screen.judgedTrainerSeen {
		t.Fatalf("the screen refreshed %d times (saw the trainer: %v)\n%s", screen.own, screen.judgedTrainerSeen, &stderr)
	}
	for _, name := range []string{"cpu", "gpu"} {
		if counts[name] == nil {
			t.Fatalf("no %s source among %v", name, counts)
		}
	}
	// A refresh of the keeper's that began as the screen opened may end
	// in the screen's time: one at most.
	if screen.all-screen.own > 1 {
		t.Errorf("the monitor made %d refreshes while the screen made %d: the keeper or the recorder refreshed too", screen.all, screen.own)
	}
	for name, n := range screen.samplesDuring {
		if int(n) != screen.all {
			t.Errorf("source %s sampled %d times in the %d refreshes while the screen was up: want once a refresh", name, n, screen.all)
		}
	}
	_, es, err := recording.ReadAll(rec)
	if err != nil {
		t.Fatal(err)
	}
	var host, steps int
	for _, e := range es {
		switch {
		case e.Host != nil:
			host++
		case e.Frame != nil && e.Frame.Type == ipc.TypeSteps:
			steps += len(e.Frame.Steps)
		}
	}
	if host < 2 || steps < 100 {
		t.Errorf("the recording holds %d host readings and %d steps of a 3 s run of 5 ms steps", host, steps)
	}
}
