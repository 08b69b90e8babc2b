package verdict

import (
	"fmt"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
)

// Thresholds of the loader-takes-cores rule.
const (
	LoaderCores     = 0.25 // loader workers using at least this share of the CPU the run's threads got ...
	LoaderTrainWait = 0.10 // ... and, on a GPU, the training thread waiting at least this share of the time it wants a CPU
)

// loaderCoresRule: the step is the network's (no GPU: compute; a GPU that
// waits while the training thread waits for a CPU), the input keeps up,
// and the loader's workers keep it up by decoding amplified chunks on the
// cores the network needs. Fixing the chunking gives those cores back.
func loaderCoresRule(in *Inputs) (Verdict, bool) {
	c, l := hostCPU(in), in.Loader
	if c == nil || l == nil || l.Workers == 0 || c.UsableCores <= 0 {
		return Verdict{}, false
	}
	fix, amp, ok := rechunkFix(l)
	used := c.WorkerCores
	if !ok || c.Used <= 0 || used < LoaderCores*c.Used {
		return Verdict{}, false
	}
	s := in.Summary
	if st := s.Stage(stage.DataWait); st != nil && st.Share >= InputShare {
		return Verdict{}, false // input-bound says it with the same fix
	}
	network := classShare(s, stage.ClassNetwork)
	if g := gpuOf(s, in.Host); g.known {
		if g.busy >= GPUBusyBound || trainingWait(c) < LoaderTrainWait {
			return Verdict{}, false
		}
	} else if network < NetworkShare {
		return Verdict{}, false
	}
	top := largestOf(s, stage.ClassNetwork)
	head := fmt.Sprintf("loader-takes-cores: the DataLoader workers take %.1f of the %.1f cores the run gets (%s usable) from the network, decoding %.0fx the bytes they return; the network takes %s of each %s step, most in %s",
		used, c.Used, cores(c.UsableCores), amp, units.Pct(network), units.Dur(s.WallMean), top.Name)
	if tw := trainingWait(c); tw >= LoaderTrainWait {
		head += fmt.Sprintf("; the training thread waited %s of its time for a CPU", units.Pct(tw))
	}
	return Verdict{Kind: LoaderTakesCores, Stage: top.Name, Headline: head,
		Next: fix + "; the loader's decoding takes the network's CPU: `pipetop bisect -- CMD` (your training command) measures the network alone against the full run, the gain to expect"}, true
}

// rechunkFix is the rechunk advice for an amplified loader and its read
// amplification; ok is false for a loader that decodes what it returns.
func rechunkFix(l *stage.LoaderStats) (fix string, amp float64, ok bool) {
	if c, ok := worstRead(l); ok {
		return c.Why + ": " + c.Fix, c.Amp, true
	}
	if l.ReadAmp >= HighReadAmp {
		return fmt.Sprintf("the chunking decodes %.0fx the bytes it uses: run `pipetrain data rechunk %s --chunk-frames 1`", l.ReadAmp, rechunkArgs(l.Dataset)), l.ReadAmp, true
	}
	return "", 0, false
}
