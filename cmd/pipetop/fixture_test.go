package main

import (
	"flag"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
)

// update re-records the recorded fixtures of testdata/ from live runs.
var update = flag.Bool("update", false, "re-record testdata's recorded fixtures from live runs (go test ./cmd/pipetop -run TestX -update, where TestX names the fixture)")

// recorded is testkit.Recorded of this package.
func recorded(t *testing.T, name string, record func(t *testing.T, path string)) string {
	t.Helper()
	return testkit.Recorded(t, *update, "./cmd/pipetop", name, record)
}
