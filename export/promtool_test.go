package export

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// promtool returns the path of Prometheus's promtool, skipping the test
// when it is not installed (Debian package prometheus; see
// scripts/install-deps.sh).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus): skipping the check with Prometheus's own tool")
	}
	return p
}

// TestPromtoolCheckMetrics runs `promtool check metrics` (Prometheus's own
// exposition lint) over every fixture's exposition text.
func TestPromtoolCheckMetrics(t *testing.T) {
	bin := promtool(t)
	for _, name := range fixtures {
		cmd := exec.Command(bin, "check", "metrics")
		cmd.Stdin = bytes.NewReader(format(t, gather(t, collectorOf(t, name))))
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("%s: promtool check metrics: %v\n%s", name, err, out)
		}
	}
}

// TestPromtoolRules checks the shipped recording and alerting rules with
// `promtool check rules` and runs their unit tests (rules_test.yml: the
// straggler rules over three ranks with comm, the stalled, gone and
// input-bound alerts) with `promtool test rules`.
func TestPromtoolRules(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "rules.yml"}, {"test", "rules", "rules_test.yml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "prometheus"
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
