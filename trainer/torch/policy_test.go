package torch

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tinyConfig is the test policy: small enough to train in seconds.
func tinyConfig(seed int64) Config {
	return Config{Preset: "tiny", Device: "cpu", Threads: 2, Seed: seed, LR: 1e-3}
}

// trainer drives one policy on one fixed batch.
type trainer struct {
	t     testing.TB
	p     *Policy
	data  batchData
	batch int
}

func newTrainer(t testing.TB, p *Policy, batch int) *trainer {
	tr := &trainer{t: t, p: p, data: syntheticBatch(p.Info().Config, batch, 42), batch: batch}
	if err := p.Upload(tr.data.images, tr.data.state, tr.data.action, batch); err != nil {
		t.Fatalf("upload: %v", err)
	}
	return tr
}

// step runs forward, backward, optim step and sync; it returns the loss.
func (tr *trainer) step() float32 {
	tr.t.Helper()
	for _, stage := range []struct {
		name string
		run  func() error
	}{{"forward", tr.p.Forward}, {"backward", tr.p.Backward}, {"optim", tr.p.OptimStep}} {
		if err := stage.run(); err != nil {
			tr.t.Fatalf("%s: %v", stage.name, err)
		}
	}
	loss, err := tr.p.Sync()
	if err != nil {
		tr.t.Fatalf("sync: %v", err)
	}
	return loss
}

func mean(xs []float32) float64 {
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

func TestTinyLossFalls(t *testing.T) {
	const steps, window, factor = 200, 20, 4.0
	p := newPolicy(t, openLib(t), tinyConfig(1))
	tr := newTrainer(t, p, 16)
	losses := make([]float32, steps)
	for i := range losses {
		losses[i] = tr.step()
		if math.IsNaN(float64(losses[i])) {
			t.Fatalf("step %d: loss is NaN", i)
		}
	}
	for i := 0; i < steps; i += window {
		t.Logf("steps %3d-%3d: mean loss %.4f", i, i+window-1, mean(losses[i:i+window]))
	}
	first, last := mean(losses[:window]), mean(losses[steps-window:])
	if first/last < factor {
		t.Fatalf("loss fell %.2fx (%.4f -> %.4f) in %d steps, want >= %.0fx", first/last, first, last, steps, factor)
	}
}

func TestResumeIsExact(t *testing.T) {
	const k, after = 5, 3
	lib := openLib(t)
	ckpt := filepath.Join(t.TempDir(), "step5.ckpt")
	extra := []byte(`{"step":5}`)

	a := newTrainer(t, newPolicy(t, lib, tinyConfig(7)), 8)
	for i := 0; i < k; i++ {
		a.step()
	}
	if err := a.p.Save(ckpt, extra); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, after)
	for i := range want {
		want[i] = a.step()
	}

	b := newTrainer(t, newPolicy(t, lib, tinyConfig(7)), 8)
	if fresh := b.step(); fresh == want[0] {
		t.Fatalf("a fresh policy already gives the resumed loss %v; the test cannot tell", fresh)
	}
	got, err := b.p.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, extra) {
		t.Fatalf("extra = %q, want %q", got, extra)
	}
	for i, w := range want {
		if l := b.step(); math.Abs(float64(l-w)) > 1e-6 {
			t.Fatalf("step %d after resume: loss %v, uninterrupted run %v", k+i, l, w)
		}
	}
}

// saveBytes checkpoints p to a temp file and returns its bytes.
func saveBytes(t *testing.T, p *Policy) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.ckpt")
	if err := p.Save(path, []byte("snap")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadRefusesBadFiles(t *testing.T) {
	lib := openLib(t)
	dir := t.TempDir()
	tr := newTrainer(t, newPolicy(t, lib, tinyConfig(3)), 4)
	tr.step()
	good := saveBytes(t, tr.p)

	other := newPolicy(t, lib, Config{Preset: "tiny", Device: "cpu", Threads: 2, DModel: 32})
	otherPath := filepath.Join(dir, "other.ckpt")
	if err := other.Save(otherPath, nil); err != nil {
		t.Fatal(err)
	}
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	cases := []struct {
		name, want string
		data       []byte // nil: use path as is
		path       string
	}{
		{name: "missing", path: filepath.Join(dir, "nope.ckpt"), want: "cannot open"},
		{name: "empty", data: []byte{}, want: "truncated"},
		{name: "header only", data: good[:32], want: "truncated"},
		{name: "half", data: good[:len(good)/2], want: "truncated"},
		{name: "one byte short", data: good[:len(good)-1], want: "truncated"},
		{name: "trailing garbage", data: append(bytes.Clone(good), 0), want: "unexpected bytes"},
		{name: "bad magic", data: flip(0), want: "bad magic"},
		{name: "payload bit flip", data: flip(len(good) / 2), want: "checksum mismatch"},
		{name: "last byte flip", data: flip(len(good) - 1), want: "checksum mismatch"},
		{name: "not a checkpoint", data: []byte("hello, this is not a checkpoint at all, sorry"), want: "bad magic"},
		{name: "other architecture", path: otherPath, want: "different architecture"},
	}
	before := saveBytes(t, tr.p)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if c.data != nil {
				path = filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".ckpt")
				if err := os.WriteFile(path, c.data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := tr.p.Load(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load(%s) = %v, want an error naming the file and saying %q", c.name, err, c.want)
			}
			if after := saveBytes(t, tr.p); !bytes.Equal(before, after) {
				t.Fatalf("a refused load changed the live policy")
			}
		})
	}
	// The good file still loads, and training continues after the refusals.
	goodPath := filepath.Join(dir, "good.ckpt")
	if err := os.WriteFile(goodPath, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.p.Load(goodPath); err != nil {
		t.Fatalf("good checkpoint: %v", err)
	}
	tr.step()
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notLib := filepath.Join(dir, "libnot.so")
	if err := os.WriteFile(notLib, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		want       []string
	}{
		{"missing file", filepath.Join(dir, "libpipetorch.so"), []string{"no such file", "scripts/build-shim.sh"}},
		{"not a library", notLib, []string{"dlopen", notLib}},
		{"library without the ABI", libcPath(t), []string{"missing symbol pt_abi_version"}},
		{"ABI version mismatch", buildFakeShim(t, dir), []string{"ABI version 999", "scripts/build-shim.sh"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.path)
			if err == nil {
				t.Fatalf("Open(%s) succeeded", c.path)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open(%s) = %q, want it to mention %q", c.path, err, w)
				}
			}
		})
	}
}

// libcPath finds a real shared library that is not the shim.
func libcPath(t *testing.T) string {
	for _, p := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6", "/usr/lib/libm.so.6"} {
		if fileExists(p) {
			return p
		}
	}
	t.Skip("no libm.so.6 found to test a library without the pipetorch ABI")
	return ""
}

// buildFakeShim compiles testdata/abi999.c, a library with every entry
// point whose pt_abi_version reports 999.
func buildFakeShim(t *testing.T, dir string) string {
	out := filepath.Join(dir, "libabi999.so")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	cmd := exec.Command(cc, "-shared", "-fPIC", "-I.", "-o", out, filepath.Join("testdata", "abi999.c"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile testdata/abi999.c: %v\n%s", err, b)
	}
	return out
}

func TestFindShim(t *testing.T) {
	dir := t.TempDir()
	shim := filepath.Join(dir, "build", "torch", ShimName)
	if err := os.MkdirAll(filepath.Dir(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shim, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "cmd", "x")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("env", func(t *testing.T) {
		t.Setenv("PIPETOP_SHIM", shim)
		if got, err := FindShim(); err != nil || got != shim {
			t.Fatalf("FindShim() = %q, %v; want %q", got, err, shim)
		}
	})
	t.Run("env missing", func(t *testing.T) {
		t.Setenv("PIPETOP_SHIM", filepath.Join(dir, "nope.so"))
		if _, err := FindShim(); err == nil || !strings.Contains(err.Error(), "PIPETOP_SHIM") {
			t.Fatalf("FindShim() error = %v, want one naming PIPETOP_SHIM", err)
		}
	})
	t.Run("repo build dir from a subdirectory", func(t *testing.T) {
		t.Setenv("PIPETOP_SHIM", "")
		t.Chdir(sub)
		got, err := FindShim()
		if err != nil {
			t.Fatal(err)
		}
		if g, _ := filepath.EvalSymlinks(got); g != shim {
			t.Fatalf("FindShim() = %q, want %q", got, shim)
		}
	})
	t.Run("not found", func(t *testing.T) {
		t.Setenv("PIPETOP_SHIM", "")
		empty := t.TempDir()
		if err := os.WriteFile(filepath.Join(empty, "go.mod"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Chdir(empty)
		_, err := FindShim()
		if err == nil || !strings.Contains(err.Error(), "build-shim.sh") {
			t.Fatalf("FindShim() error = %v, want a hint to build-shim.sh", err)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	lib := openLib(t)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown preset", Config{Preset: "huge"}, `unknown preset "huge"`},
		{"heads", Config{Preset: "tiny", Device: "cpu", Heads: 5}, "not divisible by heads 5"},
		{"precision", Config{Preset: "tiny", Device: "cpu", Precision: "fp8"}, `"precision"`},
		{"device", Config{Preset: "tiny", Device: "tpu"}, `"device"`},
		{"tiny image", Config{Preset: "tiny", Device: "cpu", H: 8, W: 8}, "too small"},
		{"weights file", Config{Preset: "tiny", Device: "cpu", EncoderWeights: "/nonexistent/w.pt"}, "/nonexistent/w.pt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := lib.NewPolicy(c.cfg)
			if err == nil {
				p.Close()
				t.Fatalf("NewPolicy(%+v) succeeded", c.cfg)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewPolicy error = %q, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestCUDAOnCPUBuild(t *testing.T) {
	lib := openLib(t)
	p, err := lib.NewPolicy(Config{Preset: "tiny", Device: "cuda"})
	if err == nil {
		defer p.Close()
		if !p.Info().CUDABuild {
			t.Fatal("a CPU-only shim accepted device cuda")
		}
		t.Skip("CUDA shim with a GPU: nothing to refuse")
	}
	if !strings.Contains(err.Error(), "CPU-only") && !strings.Contains(err.Error(), "no CUDA device") {
		t.Fatalf("error %q does not explain why cuda is unavailable", err)
	}
}

func TestStageOrderErrors(t *testing.T) {
	p := newPolicy(t, openLib(t), tinyConfig(1))
	if err := p.Forward(); err == nil || !strings.Contains(err.Error(), "no batch uploaded") {
		t.Fatalf("forward before upload: %v", err)
	}
	if err := p.Backward(); err == nil || !strings.Contains(err.Error(), "backward") {
		t.Fatalf("backward before forward: %v", err)
	}
	if _, err := p.Sync(); err == nil {
		t.Fatal("sync before forward succeeded")
	}
	c := p.Info().Config
	d := syntheticBatch(c, 2, 1)
	err := p.Upload(d.images[:len(d.images)-1], d.state, d.action, 2)
	if err == nil || !strings.Contains(err.Error(), "images has") {
		t.Fatalf("short images: %v", err)
	}
	if err := p.Upload(d.images, d.state, d.action, 3); err == nil || !strings.Contains(err.Error(), "want") {
		t.Fatalf("wrong batch: %v", err)
	}
	if err := p.Upload(d.images, d.state, d.action, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.Forward(); err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(); err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(); err == nil {
		t.Fatal("second backward without forward succeeded")
	}
	if _, g, err := p.SyncNorm(); err != nil || !math.IsNaN(float64(g)) {
		t.Fatalf("grad norm before any optim step = %v, %v; want NaN", g, err)
	}
	if err := p.OptimStep(); err != nil {
		t.Fatal(err)
	}
	if l, g, err := p.SyncNorm(); err != nil || !(g > 0) || math.IsInf(float64(g), 0) || !(l > 0) {
		t.Fatalf("after optim step: loss %v, grad norm %v, %v; want both positive and finite", l, g, err)
	}
	if err := p.OptimStep(); err == nil || !strings.Contains(err.Error(), "no gradients") {
		t.Fatalf("optim step without gradients: %v", err)
	}
	if n := p.PollGPUTimings(make([]StageTiming, 8)); n != 0 {
		t.Fatalf("PollGPUTimings on CPU = %d, want 0", n)
	}
	p.Close()
	if err := p.Forward(); err != ErrClosed {
		t.Fatalf("forward after close: %v, want ErrClosed", err)
	}
}

func TestBF16OnCPU(t *testing.T) {
	lib := openLib(t)
	cfg := tinyConfig(5)
	cfg.Precision = "bf16"
	p := newPolicy(t, lib, cfg)
	if p.Info().Precision != "bf16" {
		t.Fatalf("precision %q, want bf16", p.Info().Precision)
	}
	q := newPolicy(t, lib, tinyConfig(5))
	if q.Info().Precision != "fp32" {
		t.Fatalf("auto precision on CPU = %q, want fp32", q.Info().Precision)
	}
	// The first loss does not depend on the network (its output layer
	// starts at zero), so compare after a few updates.
	tb, tf := newTrainer(t, p, 4), newTrainer(t, q, 4)
	var lb, lf float32
	for i := 0; i < 3; i++ {
		lb, lf = tb.step(), tf.step()
	}
	if math.IsNaN(float64(lb)) || lb <= 0 {
		t.Fatalf("bf16 loss %v", lb)
	}
	if lb == lf {
		t.Fatalf("bf16 and fp32 losses are identical (%v): autocast had no effect", lb)
	}
	if math.Abs(float64(lb-lf)) > 0.1*float64(lf) {
		t.Fatalf("bf16 loss %v too far from fp32 %v", lb, lf)
	}
}
