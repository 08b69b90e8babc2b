package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// scriptPhase is a measured pipetop bisect phase.
func scriptPhase(name string, rate float64, s stage.Summary) PhaseResult {
	p := phase(name, 8, rate, s, nil)
	p.Status, p.Steps = PhaseOK, 100
	return p
}

// coldCase is a bisect whose loader keeps up warm (400 samples/s against
// the network's 200 on cached batches) but from a cold cache delivers
// 40, the files read at 12 MB/s: storage-bound.
func coldCase() []PhaseResult {
	cpuBound := plantedWith(50, map[string]float64{stage.DataWait: 1, stage.Forward: 40, stage.Backward: 50, stage.Optim: 9}, 0)
	cold := scriptPhase(PhaseCold, 40, stage.Summary{})
	cold.DiskReadPerSec = 12e6
	cold.Eviction = &Eviction{Roots: []string{"/data/set"}, Files: 1200, Bytes: 1200 * 80e3}
	return []PhaseResult{
		scriptPhase(PhaseLoader, 400, stage.Summary{}),
		cold,
		scriptPhase(PhaseCached, 200, cpuBound),
		scriptPhase(PhaseFull, 190, cpuBound),
	}
}

// The cold-phase rule: a loader that keeps up warm but not from a cold
// cache makes the run storage-bound, with the figures and the fixes.
func TestColdStorageBound(t *testing.T) {
	v := DiagnoseBisect(coldCase())
	if v.Kind != StorageBound {
		t.Fatalf("verdict %s: %s", v.Kind, v)
	}
	for _, want := range []string{"storage-bound: the loader alone delivers 40.0 samples/s from a cold cache, 400 warm",
		"the files are read at", "1200 files of", "the network takes 200 on cached batches"} {
		if !strings.Contains(v.Headline, want) {
			t.Errorf("headline lacks %q: %s", want, v.Headline)
		}
	}
	for _, want := range []string{"fewer, larger files", "more workers than cores or a larger prefetch_factor", "a local copy"} {
		if !strings.Contains(v.Next, want) {
			t.Errorf("next lacks %q: %s", want, v.Next)
		}
	}
	if c, ok := ColdFinding(coldCase()); !ok || !c.Storage {
		t.Errorf("ColdFinding %+v %v", c, ok)
	}
}

// TestColdRuleCanFail mutates each condition of the cold-phase rule in
// turn: none of the mutants may be called storage-bound.
func TestColdRuleCanFail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func([]PhaseResult) []PhaseResult
		want   Kind // the kind without the cold finding
	}{
		{"cold at ColdShort of warm: not storage-bound", func(ps []PhaseResult) []PhaseResult {
			ps[1].SamplesPerSec = ColdShort * ps[0].SamplesPerSec
			return ps
		}, ComputeBound},
		{"no cold phase", func(ps []PhaseResult) []PhaseResult { return append(ps[:1], ps[2:]...) }, ComputeBound},
		{"the cold phase failed", func(ps []PhaseResult) []PhaseResult {
			ps[1].Status = PhaseFailed
			return ps
		}, ComputeBound},
		{"no warm loader phase", func(ps []PhaseResult) []PhaseResult { return ps[1:] }, ComputeBound},
		{"the network slower than the cold loader", func(ps []PhaseResult) []PhaseResult {
			ps[2].SamplesPerSec, ps[3].SamplesPerSec = 30, 29
			return ps
		}, ComputeBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := DiagnoseBisect(tc.mutate(coldCase()))
			if v.Kind == StorageBound || v.Kind != tc.want {
				t.Errorf("verdict %s, want %s: %s", v.Kind, tc.want, v)
			}
		})
	}
}

// A cold loader near its warm self is not storage-bound, and the verdict
// says so after its own; a storage-bound loader that is short warm too
// stays input-bound, the storage's fix after the input's.
func TestColdBesideOtherVerdicts(t *testing.T) {
	ps := coldCase()
	ps[1].SamplesPerSec = 380
	v := DiagnoseBisect(ps)
	if v.Kind != ComputeBound || !strings.Contains(v.Headline, "380 samples/s from a cold cache, 400 warm: not storage-bound") {
		t.Errorf("decode-bound: %s %s", v.Kind, v)
	}
	ps = coldCase()
	ps[0].SamplesPerSec, ps[1].SamplesPerSec, ps[3].SamplesPerSec = 60, 20, 55
	v = DiagnoseBisect(ps)
	if v.Kind != InputBound || !strings.Contains(v.Headline, "from a cold cache it is slower still") || !strings.Contains(v.Next, "the storage holds the loader back") {
		t.Errorf("short warm and cold: %s %s", v.Kind, v)
	}
	// A bisect of the loader alone, warm and cold: the finding is the
	// verdict.
	ps = coldCase()[:2]
	if v := DiagnoseBisect(ps); v.Kind != StorageBound {
		t.Errorf("loader and cold only: %s %s", v.Kind, v)
	}
}

// A failure every phase would have is the verdict, once, in the script's
// own words; no pipetrain phase name appears in any pipetop verdict.
func TestScriptFailures(t *testing.T) {
	two, one := 2, 1
	missing := PhaseResult{Name: PhaseLoader, Status: PhaseFailed, ExitStatus: &two, EveryPhase: true,
		Cause: "python3: can't open file '/x/missing.py': [Errno 2] No such file or directory"}
	step4 := func(name string, every bool) PhaseResult {
		return PhaseResult{Name: name, Status: PhaseFailed, ExitStatus: &one, EveryPhase: every, Cause: "RuntimeError: boom at step 4"}
	}
	for _, tc := range []struct {
		name     string
		phases   []PhaseResult
		want     Kind
		contains []string
	}{
		{"missing script", []PhaseResult{missing}, ScriptFailed, []string{"every phase would fail: python3: can't open file", "(exit status 2)"}},
		{"nothing connected", []PhaseResult{{Name: PhaseLoader, Status: PhaseFailed, EveryPhase: true,
			Cause: NotConnected + " within 4s: the command ran no Python process (it ran sleep)"}}, ScriptFailed,
			[]string{"nothing instrumented connected within 4s: the command ran no Python process", "imports torch"}},
		{"fails at its 4th step", []PhaseResult{scriptPhase(PhaseLoader, 400, stage.Summary{}), step4(PhaseCached, false), step4(PhaseForward, true)},
			ScriptFailed, []string{"the cached and forward phases", "RuntimeError: boom at step 4", "(exit status 1)"}},
		{"failed phases, not the same way", []PhaseResult{step4(PhaseCached, false), step4(PhaseFull, false)},
			WarmingUp, []string{"bisect incomplete: the full phase failed (exit status 1): RuntimeError: boom at step 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := DiagnoseBisect(tc.phases)
			if v.Kind != tc.want {
				t.Errorf("verdict %s, want %s: %s", v.Kind, tc.want, v)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict lacks %q: %s", c, v)
				}
			}
			if strings.Contains(v.String(), PhaseTrainFixed) || strings.Contains(v.String(), PhaseSynthetic) {
				t.Errorf("a pipetrain phase in a pipetop verdict: %s", v)
			}
		})
	}
}

// A memory creep seen in a phase other than full is bisect's own (its
// cache, its replay): the comparison judges that phase on its steps.
func TestBisectMemoryIsNotTheScripts(t *testing.T) {
	cpuBound := plantedWith(50, map[string]float64{stage.DataWait: 1, stage.Forward: 40, stage.Backward: 50, stage.Optim: 9}, 0)
	cached := scriptPhase(PhaseCached, 200, cpuBound)
	cached.Verdict = &Verdict{Kind: MemoryCreep, Headline: "memory creep: the trainer's resident memory grew 385 MiB in 24 s"}
	v := DiagnoseBisect([]PhaseResult{scriptPhase(PhaseLoader, 400, stage.Summary{}), cached, scriptPhase(PhaseFull, 190, cpuBound)})
	if v.Kind == MemoryCreep || strings.Contains(v.Headline, "memory creep") {
		t.Errorf("the cached phase's memory judged as the script's: %s", v)
	}
}
