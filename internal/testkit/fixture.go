package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// Recorded is testdata/name, a fixture that record makes from a live run
// (it writes the file at the path it is given). With update (a package's
// -update flag) it is made afresh; a missing fixture fails the test,
// naming the go test command (of package pkg) that makes it. A test whose
// point is not the live path reads a run recorded once instead of
// planting it each time.
func Recorded(t *testing.T, update bool, pkg, name string, record func(t *testing.T, path string)) string {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		record(t, path)
		t.Logf("re-recorded %s", path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("fixture %s: %v (go test %s -run '^%s$' -update records it)", path, err, pkg, t.Name())
	}
	return path
}
