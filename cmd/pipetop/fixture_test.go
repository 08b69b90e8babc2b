package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update re-records the recorded fixtures of testdata/ from live runs.
var update = flag.Bool("update", false, "re-record testdata's recorded fixtures from live runs (go test ./cmd/pipetop -run TestX -update, where TestX names the fixture)")

// recorded is testdata/name, a fixture that record makes from a live run
// (it writes the file at the path it is given). With -update it is made
// afresh; a missing fixture fails the test, naming how to make it. Tests
// whose point is not the live path (a report's page, a flame graph's
// stacks) read a run recorded once instead of planting it each time.
func recorded(t *testing.T, name string, record func(t *testing.T, path string)) string {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		record(t, path)
		t.Logf("re-recorded %s", path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("fixture %s: %v (go test ./cmd/pipetop -run '^%s$' -update records it)", path, err, t.Name())
	}
	return path
}
