package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// BinEnv names the directory of the module's prebuilt binaries (make
// build's bin/) that tests run instead of building their own: make test
// builds them once and hands them to every test package through it.
const BinEnv = "PIPETOP_TEST_BIN"

// binaries are the module's programs the tests run, by binary name.
var binaries = map[string]string{
	"pipetop":   "./cmd/pipetop",
	"pipetrain": "./cmd/pipetrain",
	"synthetic": "./examples/synthetic",
	"gpusample": "./examples/gpusample",
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// BinDir is a directory that holds the module's binaries (pipetop,
// pipetrain, synthetic, gpusample): $PIPETOP_TEST_BIN when set, else
// build/testbin under the module's root, brought up to date once per test
// process (go build leaves a binary that is already up to date alone, and
// a lock keeps the test processes of one go test run from building at the
// same time). Tests must not write into it.
func BinDir(t testing.TB) string {
	t.Helper()
	dir, err := BinDirErr()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Bin is the path of the module's binary name (see BinDir).
func Bin(t testing.TB, name string) string {
	t.Helper()
	if _, ok := binaries[name]; !ok {
		t.Fatalf("testkit: no binary %q", name)
	}
	return filepath.Join(BinDir(t), name)
}

// BinDirErr is BinDir for TestMain, where there is no test yet.
func BinDirErr() (string, error) {
	binOnce.Do(func() { binDir, binErr = findBins() })
	return binDir, binErr
}

// findBins is $PIPETOP_TEST_BIN, checked to hold every binary, or the
// fallback directory once built.
func findBins() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		for name := range binaries {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return "", fmt.Errorf("%s=%s: %w (make build makes it)", BinEnv, dir, err)
			}
		}
		return filepath.Abs(dir)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "build", "testbin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("test binaries: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	pkgs := make([]string, 0, len(binaries))
	for _, pkg := range binaries {
		pkgs = append(pkgs, pkg)
	}
	if err := BuildErr(root, dir, pkgs...); err != nil {
		return "", err
	}
	return dir, nil
}

// lockDir takes an exclusive lock on dir's .lock file until unlock.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("test binaries: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("test binaries: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}
