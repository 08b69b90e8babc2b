package trainer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/torch"
)

// These tests train the real tiny preset through the real libtorch shim on
// a small generated dataset. `make test` builds the shim first.

// onceDir is a dataset directory the tests generate once per process;
// TestMain removes it (the bisect sets hold hundreds of MB).
type onceDir struct {
	once sync.Once
	dir  string
	err  error
}

// get returns the directory, filling it with fill on the first call.
func (d *onceDir) get(t testing.TB, fill func(dir string) error) string {
	t.Helper()
	d.once.Do(func() {
		if d.dir, d.err = os.MkdirTemp("", "pipetrain-data"); d.err == nil {
			d.err = fill(d.dir)
		}
	})
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d.dir
}

var smallData onceDir

// TestMain runs the tests, then removes the datasets they generated.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []*onceDir{&smallData, &lz4Data, &gzipData, &benchSet} {
		if d.dir != "" {
			os.RemoveAll(d.dir)
		}
	}
	os.Exit(code)
}

// testData generates (once) a small 4-camera dataset with 32x32 frames.
func testData(t *testing.T) string {
	dir := smallData.get(t, func(dir string) error {
		return dataset.Generate(dataset.GenOptions{Out: filepath.Join(dir, "demo.zarr"), Episodes: 6, Frames: 60, ChunkFrames: 1, Size: 32, Seed: 3})
	})
	return filepath.Join(dir, "demo.zarr")
}

func shim(t *testing.T) string {
	t.Helper()
	p, err := torch.FindShim()
	if err != nil {
		t.Fatalf("%v (make test builds it: scripts/build-shim.sh)", err)
	}
	return p
}

func tinyConfig(t *testing.T) TrainConfig {
	return TrainConfig{Data: testData(t), Shim: shim(t), Name: "test", Batch: 8, Workers: 1, Seed: 7,
		LogEvery: 1, NoServe: true, Model: torch.Config{Preset: "tiny", Threads: 1, Device: "cpu", LR: 1e-3}}
}

func mean(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}

// TestTinyPresetLearns: the DDPM loss of the tiny preset falls by at least
// a third within 150 steps on the generated data.
func TestTinyPresetLearns(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxSteps = 150
	res, err := Train(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Losses) != 150 {
		t.Fatalf("%d losses, want 150", len(res.Losses))
	}
	first, last := mean(res.Losses[:10]), mean(res.Losses[140:])
	t.Logf("loss: first 10 steps %.4f, last 10 steps %.4f (%.2fx lower)", first, last, first/last)
	if last > first/1.5 {
		t.Fatalf("loss fell from %.4f to %.4f, want at least 1.5x lower", first, last)
	}
}

// TestResumeMatchesUninterruptedRun: 6 steps, checkpoint, resume for 6 more
// gives the same losses as 12 steps in one go.
func TestResumeMatchesUninterruptedRun(t *testing.T) {
	straight := tinyConfig(t)
	straight.MaxSteps = 12
	want, err := Train(context.Background(), straight)
	if err != nil {
		t.Fatal(err)
	}
	first := tinyConfig(t)
	first.CkptDir = t.TempDir()
	first.MaxSteps = 6
	if _, err := Train(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	second := first
	second.MaxSteps = 12
	second.Resume = true
	got, err := Train(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	if got.Steps != 6 || len(got.Losses) != 6 {
		t.Fatalf("resumed run did %d steps, %d losses", got.Steps, len(got.Losses))
	}
	for i, l := range got.Losses {
		if w := want.Losses[6+i]; l != w {
			t.Errorf("step %d: resumed loss %v, uninterrupted %v", 6+i, l, w)
		}
	}
}

// TestCancelWritesCheckpoint: what SIGINT does (the signal cancels the
// context) ends the run cleanly with a checkpoint of the next step.
func TestCancelWritesCheckpoint(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.CkptDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var steps int
	cfg.LogEvery = 1
	cfg.Log = logFunc(func(line string) {
		if strings.HasPrefix(line, "step") {
			if steps++; steps == 3 {
				cancel()
			}
		}
	})
	res, err := Train(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || len(res.CkptSteps) != 1 || res.CkptSteps[0] != res.NextStep {
		t.Fatalf("stopped=%v ckpts=%v next=%d", res.Stopped, res.CkptSteps, res.NextStep)
	}
	if _, err := os.Stat(filepath.Join(cfg.CkptDir, LatestCheckpoint)); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptCheckpointIsRefused: a damaged latest.ckpt is refused with an
// error naming it, and no checkpoint file is changed.
func TestCorruptCheckpointIsRefused(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.CkptDir = t.TempDir()
	cfg.MaxSteps, cfg.CkptEvery = 4, 2 // checkpoints at 2 and 4: previous + latest
	if _, err := Train(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	latest := filepath.Join(cfg.CkptDir, LatestCheckpoint)
	prev := filepath.Join(cfg.CkptDir, PreviousCheckpoint)
	good, _ := os.ReadFile(latest)
	prevBytes, _ := os.ReadFile(prev)
	for name, damage := range map[string][]byte{
		"truncated": good[:len(good)/2],
		"garbage":   []byte("this is not a checkpoint"),
	} {
		t.Run(name, func(t *testing.T) {
			os.WriteFile(latest, damage, 0o644)
			cfg.Resume, cfg.MaxSteps = true, 8
			_, err := Train(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), latest) || !strings.Contains(err.Error(), PreviousCheckpoint) {
				t.Fatalf("err = %v, want a refusal naming %s and the previous checkpoint", err, latest)
			}
			if got, _ := os.ReadFile(latest); string(got) != string(damage) {
				t.Error("the refused checkpoint was changed")
			}
			if got, _ := os.ReadFile(prev); string(got) != string(prevBytes) {
				t.Error("the previous checkpoint was changed")
			}
		})
	}
}

type capture struct {
	mu   sync.Mutex
	recs []stage.Record
}

func (c *capture) Publish(r *stage.Record)         { c.mu.Lock(); c.recs = append(c.recs, *r); c.mu.Unlock() }
func (c *capture) PublishLoader(stage.LoaderStats) {}
func (c *capture) PublishEvent(kind, msg string)   {}

// TestStagesAddUpToWall: every published record's stage times sum to its
// wall time exactly (other holds the rest), with the real model and loader.
func TestStagesAddUpToWall(t *testing.T) {
	cfg := tinyConfig(t)
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pub := &capture{}
	res, err := Run(context.Background(), LoopConfig{MaxSteps: 10, LogEvery: 3, Stages: AllStages,
		Model: PolicyModel{s.Policy}, Publisher: pub}, s.Loader)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 10 || len(pub.recs) != 10 {
		t.Fatalf("%d steps, %d published", res.Steps, len(pub.recs))
	}
	for _, r := range pub.recs {
		var sum int64
		for i := 0; i < r.NumStages; i++ {
			sum += r.CPU[i]
		}
		if sum != r.WallNs() {
			t.Fatalf("step %d: stages sum to %d, wall is %d", r.Step, sum, r.WallNs())
		}
		for _, name := range []string{stage.DataWait, stage.H2D, stage.Forward, stage.Backward, stage.Optim} {
			if r.CPU[indexOf(name)] <= 0 {
				t.Fatalf("step %d: stage %s not timed", r.Step, name)
			}
		}
	}
}

func indexOf(name string) int {
	for i, n := range stage.Canonical {
		if n == name {
			return i
		}
	}
	return -1
}

type logFunc func(string)

func (f logFunc) Write(p []byte) (int, error) { f(string(p)); return len(p), nil }

func TestOpenErrors(t *testing.T) {
	cfg := tinyConfig(t)
	for _, tc := range []struct {
		name string
		mod  func(*TrainConfig)
		want string
	}{
		{"missing shim", func(c *TrainConfig) { c.Shim = "/nonexistent/libpipetorch.so" }, "build it with scripts/build-shim.sh"},
		{"not a library", func(c *TrainConfig) { c.Shim = "/etc/hostname" }, "hostname"},
		{"missing data", func(c *TrainConfig) { c.Data = "/nonexistent.zarr" }, "/nonexistent.zarr"},
		{"bad batch", func(c *TrainConfig) { c.Batch = 0 }, "--batch"},
		{"resume without ckpt", func(c *TrainConfig) { c.Resume = true }, "--ckpt"},
		{"bad preset", func(c *TrainConfig) { c.Model.Preset = "huge" }, "huge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			tc.mod(&c)
			s, err := Open(c)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
