package diagnosis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// bins holds the binaries under test (testkit.BinDir).
var bins string

func TestMain(m *testing.M) {
	dir, err := testkit.BinDirErr()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins = dir
	os.Exit(m.Run())
}

// scenario is one planted bottleneck and the verdict it must get.
type scenario struct {
	name string
	// start launches the publisher with its own socket directory (in its
	// Env) and returns its stderr.
	start func(t *testing.T, name string) (*exec.Cmd, *bytes.Buffer, error)
	after time.Duration // how long after the start pipetop attaches
	// interval is pipetop's --interval (its collection time).
	interval time.Duration
	window   string
	kind     verdict.Kind
	// also are other acceptable kinds, for a real trainer whose timing on
	// a loaded machine moves it across a threshold.
	also     []verdict.Kind
	stage    string
	next     []string // substrings of the next step
	headline []string // substrings of the headline
}

func synthetic(args ...string) func(*testing.T, string) (*exec.Cmd, *bytes.Buffer, error) {
	return func(t *testing.T, _ string) (*exec.Cmd, *bytes.Buffer, error) {
		return launch(t, nil, filepath.Join(bins, "synthetic"), append([]string{"-quiet"}, args...)...)
	}
}

// launch starts bin in a fresh socket directory with extra environment;
// the test's cleanup kills it.
func launch(t *testing.T, extra []string, bin string, args ...string) (*exec.Cmd, *bytes.Buffer, error) {
	dir, err := os.MkdirTemp("/tmp", "diag")
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "PIPETOP_SOCKET_DIR="+dir), extra...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	})
	return cmd, stderr, nil
}

// result is what pipetop --json said about one scenario.
type result struct {
	verdict *verdict.Verdict
	out     []byte
	err     error
	logs    *bytes.Buffer
	agg     *result // what a pipetop that asked for agg frames said at the same time
}

// TestPlantedBottlenecks runs every scenario at once (they mostly sleep;
// t.Parallel would run only GOMAXPROCS of them at a time), then checks
// each verdict in its own subtest.
func TestPlantedBottlenecks(t *testing.T) {
	testkit.Serial(t)
	scs := append(append(append(goScenarios(), pythonScenarios()...), pipetrainScenarios()...), torchScenarios()...)
	results := observeAll(t, scs)
	for i, sc := range scs {
		t.Run(sc.name, func(t *testing.T) { check(t, sc, results[i]) })
	}
}

// observeAll starts every scenario at once and observes each (they mostly
// sleep; t.Parallel would run only GOMAXPROCS of them at a time).
func observeAll(t *testing.T, scs []scenario) []result {
	t.Helper()
	results := make([]result, len(scs))
	var wg sync.WaitGroup
	for i, sc := range scs {
		cmd, logs, err := sc.start(t, sc.name)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = observe(sc, cmd.Env)
			results[i].logs = logs
		}()
	}
	wg.Wait()
	return results
}

// observe runs two viewers on sc at once: one takes the steps, the other
// agg frames (PIPETOP_AGGREGATES=1); check judges both.
func observe(sc scenario, env []string) result {
	var agg result
	done := make(chan struct{})
	go func() {
		defer close(done)
		agg = observeAs(sc, append(slices.Clone(env), "PIPETOP_AGGREGATES=1"))
	}()
	r := observeAs(sc, append(slices.Clone(env), "PIPETOP_AGGREGATES=0"))
	<-done
	r.agg = &agg
	return r
}

func goScenarios() []scenario {
	healthy := "data_wait=0.3ms,forward=6ms,backward=5ms,optim=1ms"
	return []scenario{
		{name: "go/slow start in data_wait", start: synthetic("-start-delay", "60s", "-stages", healthy),
			after: 2 * time.Second, interval: 2500 * time.Millisecond, kind: verdict.Starting, stage: stage.DataWait,
			headline: []string{"no step yet after", "in data_wait for"}, next: []string{"loader"}},
		{name: "go/periodic input stalls", start: synthetic("-every", "10", "-spike", "150ms", "-stages", "data_wait=1ms,forward=8ms", "-loader-busy", "0.2"),
			after: 2500 * time.Millisecond, interval: time.Second, kind: verdict.InputStalls, stage: stage.DataWait,
			headline: []string{"every 10th step waits"}, next: []string{"deepen the prefetch", "every 10 steps"}},
		{name: "go/hang in an all-reduce", start: synthetic("-hang-after", "80", "-hang-stage", "comm", "-stages", healthy),
			after: 500 * time.Millisecond, interval: 8 * time.Second, kind: verdict.Stalled, stage: "comm",
			headline: []string{"stalled: no step for", "stuck in comm"}, next: []string{"rank"}},
		// pipetop attaches after the hang began: it has seen no step.
		{name: "go/hang in data_wait, attached late", start: synthetic("-hang-after", "30", "-hang-stage", "data_wait", "-stages", healthy),
			after: time.Second, interval: 6 * time.Second, kind: verdict.Stalled, stage: stage.DataWait,
			headline: []string{"stuck in data_wait"}, next: []string{"loader"}},
		{name: "go/memory creep", start: synthetic("-leak-mb-per-sec", "25", "-stages", healthy),
			after: 500 * time.Millisecond, interval: 12 * time.Second, kind: verdict.MemoryCreep,
			headline: []string{"resident memory grew", "steadily"}, next: []string{"leak"}},
		// The baseline is the first third of the time since a viewer's
		// first step (verdict.Baseline.WholeAt); an agg viewer's first
		// step ends with its first 1 s aggregate, so at 22 s its baseline
		// holds 6 s of steps even when it started 3 s late.
		{name: "go/drift in data_wait", start: synthetic("-drift-after", "9s", "-drift", "12ms", "-stages", "data_wait=0.5ms,forward=8ms"),
			after: 200 * time.Millisecond, interval: 22 * time.Second, kind: verdict.Drift, stage: stage.DataWait,
			headline: []string{"slower than in the run's first", "data_wait grew"}, next: []string{"loader slowed down"}},
		{name: "go/steady input-bound", start: synthetic("-stages", "data_wait=12ms,forward=4ms", "-rate", "50"),
			after: time.Second, interval: time.Second, kind: verdict.InputBound, stage: stage.DataWait,
			headline: []string{"waits on data_wait"}, next: []string{"loader workers are busy only"}},
		{name: "go/starved loader: every worker busy", start: synthetic("-stages", "data_wait=12ms,forward=4ms", "-rate", "50", "-loader-busy", "0.97", "-loader-amp", "1"),
			after: 1500 * time.Millisecond, interval: time.Second, kind: verdict.InputBound, stage: stage.DataWait,
			next: []string{"all 2 loader workers are busy 97 %", "faster codec"}},
		{name: "go/moderately input-bound", start: synthetic("-rate", "50", "-stages", "data_wait=3ms,forward=8ms,backward=6ms"),
			after: 1500 * time.Millisecond, interval: time.Second, kind: verdict.ModerateInput, stage: stage.DataWait,
			next: []string{"faster ("}},
		{name: "go/a rank waiting in the all-reduce", start: synthetic("-rate", "50", "-stages", "data_wait=0.3ms,forward=3ms,backward=3ms,comm=12ms,optim=0.5ms"),
			after: time.Second, interval: time.Second, kind: verdict.StageBound, stage: stage.Comm,
			headline: []string{"comm-bound"}, next: []string{"slowest rank"}},
		{name: "go/healthy compute-bound is calm", start: synthetic("-rate", "70", "-stages", healthy),
			after: 1500 * time.Millisecond, interval: time.Second, kind: verdict.ComputeBound, stage: stage.Forward,
			next: []string{"input keeps up"}},
		{name: "go/healthy GPU-bound is calm", start: synthetic("-stages", "data_wait=0.1ms,h2d=0.2ms,forward=4ms,backward=5ms,optim=0.5ms", "-gpu", "forward=4ms,backward=5ms,optim=0.4ms", "-rate", "100"),
			after: time.Second, interval: time.Second, kind: verdict.GPUBound,
			next: []string{"pipeline keeps up"}},
	}
}

// startAndCheck starts sc, judges it once live and checks that verdict;
// it returns the publisher's stderr (the cleanup stops it).
func startAndCheck(t *testing.T, sc scenario) *bytes.Buffer {
	t.Helper()
	cmd, logs, err := sc.start(t, sc.name)
	if err != nil {
		t.Fatal(err)
	}
	r := observe(sc, cmd.Env)
	r.logs = logs
	check(t, sc, r)
	return logs
}

// observeAs waits for the publisher's socket and then sc.after, and runs
// pipetop --json against the scenario's socket directory (in env).
func observeAs(sc scenario, env []string) result {
	if err := awaitSocket(env, 20*time.Second); err != nil {
		return result{err: err}
	}
	time.Sleep(sc.after)
	window := sc.window
	if window == "" {
		window = "5s"
	}
	cmd := exec.Command(filepath.Join(bins, "pipetop"), "--json", "--no-gpu", "--interval", sc.interval.String(), "--window", window)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return result{out: out, err: fmt.Errorf("pipetop --json: %w", err)}
	}
	var snap struct {
		Verdict *verdict.Verdict `json:"verdict"`
	}
	if err := json.Unmarshal(out, &snap); err != nil {
		return result{out: out, err: fmt.Errorf("pipetop --json output: %w", err)}
	}
	return result{verdict: snap.Verdict, out: out}
}

// awaitSocket waits until a socket appears in env's PIPETOP_SOCKET_DIR: a
// loaded machine may take seconds to start a Python publisher.
func awaitSocket(env []string, d time.Duration) error {
	var dir string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PIPETOP_SOCKET_DIR="); ok {
			dir = v
		}
	}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.sock")); len(m) > 0 {
			return nil
		}
	}
	return fmt.Errorf("no publisher socket in %s after %v", dir, d)
}

// check asserts the verdicts of one scenario: both viewers' alike.
func check(t *testing.T, sc scenario, r result) {
	checkOne(t, sc, r)
	if r.agg != nil {
		r.agg.logs = r.logs
		t.Run("agg", func(t *testing.T) { checkOne(t, sc, *r.agg) })
	}
}

// checkOne asserts the verdict one viewer gave.
func checkOne(t *testing.T, sc scenario, r result) {
	if r.err != nil || r.verdict == nil {
		t.Fatalf("%v\n%s\npublisher stderr:\n%s", r.err, r.out, r.logs)
	}
	v := r.verdict
	if (v.Kind != sc.kind && !slices.Contains(sc.also, v.Kind)) || v.Stage != sc.stage {
		t.Fatalf("verdict %s/%q (%s), want %s/%q\npublisher stderr:\n%s", v.Kind, v.Stage, v, sc.kind, sc.stage, r.logs)
	}
	for _, want := range sc.headline {
		if !strings.Contains(v.Headline, want) {
			t.Errorf("headline %q lacks %q", v.Headline, want)
		}
	}
	for _, want := range sc.next {
		if !strings.Contains(v.Next, want) {
			t.Errorf("next step %q lacks %q", v.Next, want)
		}
	}
	if strings.Contains(sc.name, "healthy") && !v.Healthy() {
		t.Errorf("a healthy run got %s", v)
	}
	t.Logf("%s", v)
}
