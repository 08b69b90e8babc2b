package bisect

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// rssSlack is how far a phase's peak RSS (the script's, bisect's cache
// counted apart) may exceed the full phase's: 10 % and 50 MB.
func rssSlack(full int64) int64 { return full/10 + 50e6 }

// Every phase leaves the script's memory as the script itself would: each
// phase's peak RSS, less the cache it kept, is within 10 % + 50 MB of the
// full phase's, on resnet18 without loader workers (its cache of 300 MB
// counted as the script's would put the cached phase 1.3x over) and on 24
// MiB batches (a 1 GB cache: bisect's own memory, counted apart); and a
// bisect of a script that does not leak gives no memory-creep verdict —
// the bigbatch phases measure 13 s, long enough for the creep rule (10 s,
// CreepMinNs, over the measured window) to judge, at a few steps a second,
// so that a replay that brought its batches into memory while measured
// would creep by 24 MiB a step: no phase's memory may grow over its
// window by the creep rule's 64 MB (CreepMinBytes) more than the full
// phase's does.
func TestPhasesLeaveTheScriptsMemory(t *testing.T) {
	testkit.Concurrent(t) // memory, not speed: a loaded box slows the phases, their peaks stay

	requireTorch(t)
	if err := exec.Command(python, "-c", "import torchvision").Run(); err != nil {
		t.Fatalf("%s cannot import torchvision: %v", python, err)
	}
	for _, tc := range []struct {
		name, seconds, phases string
		cache                 bool // the cached phases keep batches
	}{
		{"resnet", "3", "loader,cached,forward,full", false}, // 2 warm-up steps: resnet18 takes a second or more a step here
		{"bigbatch", "13", "cached,forward,full", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, "--seconds-per-phase", tc.seconds, "--warmup", "2", "--phases", tc.phases, "--", python, script("memory.py"), "--case", tc.name)
			var table bytes.Buffer
			r.rep.WriteTable(&table)
			t.Logf("\n%s", table.String())
			full := phaseOf(t, r, verdict.PhaseFull)
			if full.Status != verdict.PhaseOK || full.PeakRSS <= 0 {
				t.Fatalf("full phase: %s, peak RSS %d", full.Status, full.PeakRSS)
			}
			for _, p := range r.rep.Phases {
				t.Logf("phase %s: peak RSS %d MB, cache %d MB, grew %d MB over the window", p.Name, p.PeakRSS/1e6, p.CacheBytes/1e6, p.RSSGrowth/1e6)
				if p.Status != verdict.PhaseOK {
					t.Errorf("phase %s: %s %q", p.Name, p.Status, p.Notes)
				}
				if over := p.ScriptRSS() - full.PeakRSS; over > rssSlack(full.PeakRSS) {
					t.Errorf("phase %s: peak RSS %d MB less its cache %d MB is %d MB over the full phase's %d MB",
						p.Name, p.PeakRSS/1e6, p.CacheBytes/1e6, over/1e6, full.PeakRSS/1e6)
				}
				if p.Verdict != nil && p.Verdict.Kind == verdict.MemoryCreep {
					t.Errorf("phase %s: own verdict %s", p.Name, p.Verdict)
				}
				// The full phase's tree breathes with its workers' batches in
				// flight: a phase grows no more than it does, and the creep
				// rule's least growth (CreepMinBytes).
				if grew := p.RSSGrowth - max(full.RSSGrowth, 0); grew >= verdict.CreepMinBytes {
					t.Errorf("phase %s: the resident memory grew %d MB over the measured window, the full phase's %d MB",
						p.Name, p.RSSGrowth/1e6, full.RSSGrowth/1e6)
				}
				if caching := p.Name == verdict.PhaseCached || p.Name == verdict.PhaseForward; tc.cache && caching && p.CacheBytes < 500e6 {
					t.Errorf("phase %s kept %d MB of batches, want about 1 GB", p.Name, p.CacheBytes/1e6)
				}
			}
			if v := r.rep.Verdict; v.Kind == verdict.MemoryCreep || strings.Contains(v.Headline, "memory creep") {
				t.Errorf("verdict: %s", v)
			}
			if !strings.Contains(table.String(), "peak RSS") {
				t.Errorf("the table has no peak RSS column:\n%s", table.String())
			}
			if tc.cache && !strings.Contains(table.String(), fmt.Sprintf("%s: ", verdict.PhaseCached)) {
				t.Errorf("the table does not say the cache apart:\n%s", table.String())
			}
		})
	}
}
