package pypublish

import (
	"bytes"
	"os"
	"testing"

	"github.com/pipetop/pipetop/clients/python/internal/stagespy"
)

// TestStagesModuleCurrent fails when pipetop_publish/stages.py is not what
// the stage table (metrics/stage.Known) generates.
func TestStagesModuleCurrent(t *testing.T) {
	got, err := os.ReadFile(stagespy.Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := stagespy.Source(); !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./clients/python\n--- have\n%s\n--- want\n%s", stagespy.Path, got, want)
	}
}
