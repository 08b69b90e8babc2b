package summary

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// WriteText writes the summary for people: the run, its stage table, the
// verdict over the whole run, the verdicts it went through and its
// throughput over time.
func WriteText(w io.Writer, r Run) error {
	s := r.Whole
	fmt.Fprintf(w, "run %s (pid %d) from %s\n", r.Name, r.PID, r.Source)
	if r.Damage != "" {
		fmt.Fprintf(w, "note: %s\n", r.Damage)
	}
	fmt.Fprintf(w, "%s steps in %s: %s steps/s", units.Count(int64(s.Steps)), clock(r.DurationSec), units.Rate(s.StepsPerSec))
	if s.SamplesPerSec > 0 {
		fmt.Fprintf(w, ", %s samples/s", units.Rate(s.SamplesPerSec))
	}
	fmt.Fprintf(w, "\nstep time: mean %s, p50 %s, p99 %s\n\n", units.Dur(s.WallMean), units.Dur(s.WallP50), units.Dur(s.WallP99))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tmean\tp50\tp99\tshare\tgpu mean\t")
	for _, st := range s.Stages {
		gpu := "–"
		if st.HasGPU {
			gpu = units.Dur(st.GPUMean)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", st.Name, units.Dur(st.Mean), units.Dur(st.P50), units.Dur(st.P99), units.Pct(st.Share), gpu)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeRanks(w, r); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nverdict over the run: %s\n  next: %s\n", r.Verdict.Headline, r.Verdict.Next)
	if len(r.Verdict.Also) > 0 {
		fmt.Fprintf(w, "  also: %s\n", verdict.AlsoText(r.Verdict.Also))
	}
	writeHotCode(w, r.Code)
	writeCPU(w, r.CPU)
	if len(r.Verdicts) > 0 {
		fmt.Fprintf(w, "\nverdicts over time (each over the %s before):\n", VerdictWindow)
		for _, p := range r.Verdicts {
			fmt.Fprintf(w, "  %s–%s  %s\n", clock(p.FromSec), clock(p.ToSec), p.Headline)
		}
	}
	if len(r.Throughput) > 0 {
		fmt.Fprintf(w, "\nsteps/s per %s: %s  (%s)\n", clock(r.BucketSec), spark(r.Throughput), rangeOf(r.Throughput))
	}
	return nil
}

// writeRanks writes one line per rank of a multi-rank run: its steps, step
// time and its two largest stages.
func writeRanks(w io.Writer, r Run) error {
	if len(r.Ranks) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%d ranks (the table above is rank %d's):\n", len(r.Ranks), r.Ranks[0].Rank)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tpid\tsteps\tstep mean\tp99\tlargest stages\t")
	for _, rr := range r.Ranks {
		s := rr.Whole
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t\n", rr.Rank, rr.PID, units.Count(int64(s.Steps)), units.Dur(s.WallMean), units.Dur(s.WallP99), topStages(s, 2))
	}
	return tw.Flush()
}

// topStages names the n largest stages of s with their shares.
func topStages(s stage.Summary, n int) string {
	st := slices.Clone(s.Stages)
	slices.SortStableFunc(st, func(a, b stage.StageStat) int { return cmp.Compare(b.Share, a.Share) })
	var parts []string
	for _, x := range st[:min(n, len(st))] {
		parts = append(parts, x.Name+" "+units.Pct(x.Share))
	}
	return strings.Join(parts, ", ")
}

// clock formats seconds as 4.5s under a minute, else as 2:03 or 1:02:03.
func clock(sec float64) string {
	if sec < 60 {
		return fmt.Sprintf("%.1fs", sec)
	}
	return units.Clock(time.Duration(sec * float64(time.Second)))
}

// spark draws the steps/s of each bucket as one block character.
func spark(ps []Point) string {
	const blocks = "▁▂▃▄▅▆▇█"
	bs := []rune(blocks)
	hi := 0.0
	for _, p := range ps {
		hi = max(hi, p.StepsPerSec)
	}
	var b strings.Builder
	for _, p := range ps {
		i := 0
		if hi > 0 {
			i = min(len(bs)-1, int(p.StepsPerSec/hi*float64(len(bs)-1)+0.5))
		}
		b.WriteRune(bs[i])
	}
	return b.String()
}

func rangeOf(ps []Point) string {
	lo, hi := ps[0].StepsPerSec, ps[0].StepsPerSec
	for _, p := range ps {
		lo, hi = min(lo, p.StepsPerSec), max(hi, p.StepsPerSec)
	}
	return fmt.Sprintf("min %s, max %s", units.Rate(lo), units.Rate(hi))
}

// WriteComparison writes a comparison for people: the two runs side by
// side, then the difference in words.
func WriteComparison(w io.Writer, a, b Run, c Comparison) error {
	fmt.Fprintf(w, "A: %s  %s\nB: %s  %s\n\n", a.Source, a.Describe(), b.Source, b.Describe())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tA\tB\tchange\t")
	fmt.Fprintf(tw, "step time\t%s\t%s\t%+.1f %%\t\n", units.Dur(c.StepTime.A), units.Dur(c.StepTime.B), 100*c.Relative)
	rate := func(name string, x, y float64) {
		chg := ""
		if name == c.ThroughputUnit && x > 0 {
			chg = fmt.Sprintf("%+.1f %%", 100*(y-x)/x)
			if c.Throughput.Significant {
				chg += " *"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, units.Rate(x), units.Rate(y), chg)
	}
	rate("steps/s", a.Whole.StepsPerSec, b.Whole.StepsPerSec)
	if a.Whole.SamplesPerSec > 0 || b.Whole.SamplesPerSec > 0 {
		rate("samples/s", a.Whole.SamplesPerSec, b.Whole.SamplesPerSec)
	}
	for _, s := range c.Stages {
		mark := ""
		if s.Significant {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s share\t%.1f %%\t%.1f %%\t%+.1f points%s\t\n", s.Name, s.ShareA, s.ShareB, s.ShareB-s.ShareA, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", c.Text)
	return err
}

// dropped is ", N stacks dropped (...)" when the reader from outside
// dropped stacks of p's samples, else "".
func dropped(p *stage.CodeProfile) string {
	if p == nil || p.Dropped == 0 {
		return ""
	}
	return fmt.Sprintf(", %d stacks dropped (their reads raced the interpreter)", p.Dropped)
}

// writeHotCode names the hot code of each group of stack samples that has
// one.
func writeHotCode(w io.Writer, p *stage.CodeProfile) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\nstack samples: %d at %.0f Hz%s\n", p.Samples, p.Hz, dropped(p))
	for _, g := range p.Groups {
		who := g.Who()
		hot := "no single function holds the time"
		if g.Hot != nil {
			hot = verdict.Phrase(g.Hot)
		}
		fmt.Fprintf(w, "  %s (%d samples): %s\n", who, g.Samples, hot)
	}
}
