package torch

import (
	"os"
	"os/exec"
	"testing"
)

// TestCUDAPathCompiles type-checks the CUDA-only code of csrc/ (streams,
// pinned staging, event timings, CUDA generator) against the installed
// libtorch headers, with testdata/cudastub standing in for the CUDA
// toolkit. It proves the code compiles, not that it runs: that needs a GPU.
func TestCUDAPathCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the ~10 s compile check of the CUDA paths")
	}
	if shimPath == "" {
		t.Skip("PIPETOP_NO_LIBTORCH=1: no libtorch headers")
	}
	const torchAPI = "/usr/include/torch/csrc/api/include"
	if _, err := os.Stat(torchAPI); err != nil {
		t.Skipf("libtorch headers not at %s (a non-Debian libtorch): %v", torchAPI, err)
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "c++"
	}
	for _, src := range []string{"csrc/policy.cpp"} {
		cmd := exec.Command(cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Wno-unused-parameter",
			"-DPIPETORCH_CUDA=1", "-I.", "-I"+torchAPI, "-Itestdata/cudastub", src)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("%s with PIPETORCH_CUDA: %v\n%s", src, err, out)
		}
	}
}
