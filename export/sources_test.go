package export

import (
	"testing"

	"github.com/pipetop/pipetop/monitor/sources"
)

// TestEverySourceHasItsMetrics: every source of the table has an entry in
// sourceMetrics (noMetrics when it serves none), so a new source is not
// left out of /metrics unnoticed, and every entry names a source of the
// table, so a renamed one is not served nothing.
func TestEverySourceHasItsMetrics(t *testing.T) {
	table := map[string]bool{}
	for _, p := range sources.Parts() {
		table[p.Name()] = true
		if _, ok := sourceMetrics[p.Name()]; !ok {
			t.Errorf("source %s has no entry in sourceMetrics (noMetrics{} if it serves none)", p.Name())
		}
	}
	for name := range sourceMetrics {
		if !table[name] {
			t.Errorf("sourceMetrics has an entry for %s, which is not a source of monitor/sources", name)
		}
	}
}
