package torch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shimPath is the library the tests load; empty when PIPETOP_NO_LIBTORCH=1.
var shimPath string

// TestMain builds the shim with scripts/build-shim.sh (or uses
// $PIPETOP_SHIM) before the tests run.
func TestMain(m *testing.M) {
	p, err := prepareShim()
	if err != nil {
		fmt.Fprintln(os.Stderr, "torch tests:", err)
		os.Exit(1)
	}
	shimPath = p
	os.Exit(m.Run())
}

func prepareShim() (string, error) {
	if os.Getenv("PIPETOP_NO_LIBTORCH") == "1" {
		return "", nil
	}
	if p := os.Getenv("PIPETOP_SHIM"); p != "" {
		return p, nil
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	built := filepath.Join(root, "build", "torch", ShimName)
	if _, err := exec.LookPath("cmake"); err != nil {
		if fileExists(built) {
			return built, nil
		}
		return "", fmt.Errorf("%s is missing and cmake is not installed to build it (apt-get install cmake libtorch-dev)", built)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "build-shim.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/build-shim.sh failed: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// openLib opens the shim or skips when libtorch is switched off.
func openLib(t testing.TB) *Lib {
	t.Helper()
	if shimPath == "" {
		t.Skip("PIPETOP_NO_LIBTORCH=1: skipping a test that needs libtorch")
	}
	lib, err := Open(shimPath)
	if err != nil {
		t.Fatalf("Open(%s): %v", shimPath, err)
	}
	return lib
}

// newPolicy creates a policy and closes it when the test ends.
func newPolicy(t testing.TB, lib *Lib, cfg Config) *Policy {
	t.Helper()
	p, err := lib.NewPolicy(cfg)
	if err != nil {
		t.Fatalf("NewPolicy(%+v): %v", cfg, err)
	}
	t.Cleanup(p.Close)
	return p
}
