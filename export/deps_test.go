package export

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoScreenDependencies keeps the exporter headless: it must not link
// bubbletea or any package of the terminal view.
func TestNoScreenDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "bubbletea") || strings.HasPrefix(dep, "github.com/pipetop/pipetop/tui") {
			t.Errorf("export depends on %s", dep)
		}
	}
}
