package torch

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debianPython has torch; the python3 first on PATH may not.
const debianPython = "/usr/bin/python3"

func TestEncoderWeightsRoundTrip(t *testing.T) {
	lib := openLib(t)
	dir := t.TempDir()
	src := newPolicy(t, lib, tinyConfig(1))
	if !src.Info().EncoderRandomInit {
		t.Fatal("a policy without encoder_weights does not report random init")
	}
	file := filepath.Join(dir, "enc.pt")
	if err := src.SaveEncoder(file); err != nil {
		t.Fatal(err)
	}

	cfg := tinyConfig(2) // a different seed: a different random encoder
	cfg.EncoderWeights = file
	loaded := newPolicy(t, lib, cfg)
	if loaded.Info().EncoderRandomInit {
		t.Fatal("a policy with encoder_weights reports random init")
	}
	back := filepath.Join(dir, "back.pt")
	if err := loaded.SaveEncoder(back); err != nil {
		t.Fatal(err)
	}
	python(t, filepath.Join("testdata", "resnet_weights.py"), "same", file, back)

	// The weights reach the forward pass: same seed, different encoder,
	// different loss once the output layer has moved.
	random := newTrainer(t, newPolicy(t, lib, tinyConfig(2)), 4)
	withFile := newTrainer(t, loaded, 4)
	var lr, lw float32
	for i := 0; i < 3; i++ {
		lr, lw = random.step(), withFile.step()
	}
	if lr == lw {
		t.Fatalf("loss %v is the same with and without the weights file", lr)
	}

	wide := tinyConfig(2)
	wide.EncoderWidth = 16
	wide.EncoderWeights = file
	if p, err := lib.NewPolicy(wide); err == nil {
		p.Close()
		t.Fatal("width-8 weights loaded into a width-16 encoder")
	} else if !strings.Contains(err.Error(), "shape") || !strings.Contains(err.Error(), file) {
		t.Fatalf("width mismatch error %q should name the file and the shapes", err)
	}
}

func TestEncoderWeightsFromPyTorch(t *testing.T) {
	lib := openLib(t)
	dir := t.TempDir()
	script := filepath.Join("testdata", "resnet_weights.py")
	scripted := filepath.Join(dir, "resnet.ts")
	ref := filepath.Join(dir, "ref.pt")
	python(t, script, "make", "8", scripted, ref)

	cfg := tinyConfig(1)
	cfg.EncoderWeights = scripted
	p := newPolicy(t, lib, cfg)
	if p.Info().EncoderRandomInit {
		t.Fatal("TorchScript weights reported as random init")
	}
	saved := filepath.Join(dir, "saved.pt")
	if err := p.SaveEncoder(saved); err != nil {
		t.Fatal(err)
	}
	python(t, script, "check", saved, ref)
	newTrainer(t, p, 2).step()
}

// python runs a script with Debian's python3 and its torch.
func python(t *testing.T, args ...string) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s is missing (apt-get install python3-torch): %v", debianPython, err)
	}
	out, err := exec.Command(debianPython, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", debianPython, strings.Join(args, " "), err, out)
	}
	t.Logf("python %s: %s", args[1], bytes.TrimSpace(out))
}
