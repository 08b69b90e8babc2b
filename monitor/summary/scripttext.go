package summary

import (
	"fmt"
	"io"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/loadertext"
)

// WriteScriptText writes a run summary for people, as pipetop run prints
// it at the end: the stage table, throughput, loader line, hot code and
// verdict, and the file it is in (path).
func WriteScriptText(w io.Writer, s *Script, path string) {
	secs := float64(s.WallNs) / 1e9
	fmt.Fprintf(w, "pipetop: %s (pid %d): %d steps in %.2f s, %.1f steps/s, %.1f samples/s\n",
		s.Name, s.PID, s.Steps, secs, s.StepsPerSec, s.SamplesPerSec)
	fmt.Fprintf(w, "  %-10s %9s %7s %10s\n", "stage", "total", "share", "mean/step")
	for _, st := range s.Stages {
		fmt.Fprintf(w, "  %-10s %7.3f s %5.1f %% %7.2f ms\n", st.Name, float64(st.TotalNs)/1e9, 100*st.Share, st.MeanNs/1e6)
	}
	if f := s.FirstStep; f != nil && s.Steps > 1 {
		fmt.Fprintf(w, "  first step %.2f s (start-up: loader workers, lazy initialization)\n", float64(f.WallNs)/1e9)
	}
	if l := s.Loader; l != nil {
		fmt.Fprintf(w, "  loader: %s\n", loaderLine(l))
		for _, src := range loadertext.Sources(l) {
			fmt.Fprintf(w, "  %s: %s\n", src.Kind, src.Text)
		}
	}
	for _, line := range hotLines(s.code) {
		fmt.Fprintf(w, "  hot code: %s\n", line)
	}
	if c := s.HostCPU; c != nil {
		fmt.Fprintf(w, "  cpu: %s\n", cpuLine(c))
	}
	if v := s.Verdict; v != nil {
		fmt.Fprintf(w, "  verdict: %s\n  next: %s\n", v.Headline, v.Next)
		if len(v.Also) > 0 {
			fmt.Fprintf(w, "  also: %s\n", verdict.AlsoText(v.Also))
		}
	}
	fmt.Fprintf(w, "  summary: %s\n", path)
}

// cpuLine describes the run's threads over the run, as pipetop run read
// them.
func cpuLine(c *RunCPU) string {
	line := fmt.Sprintf("threads wanted %.1f CPUs of %.3g usable, waited %s of that time for one",
		c.Demand, c.UsableCores, units.Pct(c.WaitShare))
	if c.QuotaCPUs > 0 {
		line += fmt.Sprintf("; quota %.3g CPUs, ran out in %s of its periods", c.QuotaCPUs, units.Pct(c.ThrottledShare))
	}
	if c.Training >= 0 {
		line += fmt.Sprintf("; the training thread wanted a CPU %s of the time (on one %s)", units.Pct(c.Training), units.Pct(c.TrainingCPU))
	}
	return line + fmt.Sprintf(" (means of %d readings)", c.Refreshes)
}

// loaderLine describes a Python DataLoader's settings and worker load.
func loaderLine(l *stage.LoaderStats) string {
	if l.Workers == 0 {
		return fmt.Sprintf("num_workers=0 (batches load on the training thread), %.1f batches/s", l.BatchesPerSec)
	}
	each := make([]string, len(l.WorkerBusyEach))
	for i, f := range l.WorkerBusyEach {
		each[i] = fmt.Sprintf("%.0f %%", 100*f)
	}
	return fmt.Sprintf("num_workers=%d busy %.0f %% (%s), prefetch_factor=%d, pin_memory=%v, %.1f batches/s",
		l.Workers, 100*l.WorkerBusy, strings.Join(each, ", "), l.Prefetch, l.PinMemory, l.BatchesPerSec)
}

// hotLines names the hot code of each sampled group that has one.
func hotLines(p *stage.CodeProfile) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, g := range p.Groups {
		if g.Hot == nil {
			continue
		}
		who := g.Who()
		out = append(out, fmt.Sprintf("%s: %s (%d samples)", who, verdict.Phrase(g.Hot), g.Samples))
	}
	return out
}

// WriteJobText writes the job summary for people: one line per rank, the
// straggler over the run and over time, the DDP buckets, and where the
// files are.
func WriteJobText(w io.Writer, j *Job) {
	fmt.Fprintf(w, "pipetop: run %s (%s launcher): %d of %d ranks, one job summary\n", j.Run, j.Launcher, len(j.Ranks), j.WorldSize)
	cols := jobColumns(j)
	fmt.Fprintf(w, "  %-4s %-16s %7s %6s %9s", "rank", "host", "pid", "steps", "step")
	for _, c := range cols {
		fmt.Fprintf(w, " %9s", c)
	}
	fmt.Fprintln(w)
	for _, r := range j.Ranks {
		fmt.Fprintf(w, "  %-4d %-16s %7d %6d %9s", r.Rank, r.Host, r.PID, r.Steps, units.Dur(r.StepMeanNs))
		for _, c := range cols {
			fmt.Fprintf(w, " %9s", stageCell(r.Stages, c))
		}
		fmt.Fprintln(w)
	}
	if len(j.Missing) > 0 {
		fmt.Fprintf(w, "  no summary from ranks %v (they did not finish a step, or ran elsewhere)\n", j.Missing)
	}
	if v := j.Straggler; v != nil {
		fmt.Fprintf(w, "  straggler over the run: %s\n  next: %s\n", v.Headline, v.Next)
	} else {
		fmt.Fprintln(w, "  straggler over the run: none (no rank's own work holds the others back)")
	}
	if line := overTimeLine(j.OverTime); line != "" {
		fmt.Fprintf(w, "  over time: %s\n", line)
	}
	for _, r := range j.Ranks {
		if line := ddpLine(r.DDP); line != "" {
			fmt.Fprintf(w, "  ddp rank %d: %s\n", r.Rank, line)
		}
	}
	fmt.Fprintf(w, "  job summary: %s (each rank's own beside it)\n", j.Path)
}

// ddpLine describes a rank's DDP buckets; "" without DDP.
func ddpLine(d *DDP) string {
	switch {
	case d == nil:
		return ""
	case d.Reduced > 0:
		return fmt.Sprintf("%.1f buckets a step, %s a step, bucket ready to reduced %s mean, %s max (hook %s)",
			d.BucketsPerStep, units.Bytes(d.BytesPerStep), units.Dur(d.ReadyToDoneMeanNs), units.Dur(float64(d.ReadyToDoneMaxNs)), strings.Join(d.Hooks, ", "))
	}
	return fmt.Sprintf("%.1f buckets a step, %s a step; DDP's sampled backward: compute %s, comm %s",
		d.BucketsPerStep, units.Bytes(d.BytesPerStep), units.Dur(d.DDPComputeNs), units.Dur(d.DDPCommNs))
}

// jobColumns are the stages any rank has, in the first rank's order.
func jobColumns(j *Job) []string {
	var cols []string
	seen := map[string]bool{}
	for _, r := range j.Ranks {
		for _, st := range r.Stages {
			if !seen[st.Name] {
				seen[st.Name] = true
				cols = append(cols, st.Name)
			}
		}
	}
	return cols
}

// stageCell is a rank's share of stage name, "-" when it has none.
func stageCell(stages []ScriptStage, name string) string {
	for _, st := range stages {
		if st.Name == name {
			return units.Pct(st.Share)
		}
	}
	return "-"
}

// overTimeLine merges consecutive intervals with the same straggler (rank
// and stage) into one phrase each.
func overTimeLine(ws []JobWindow) string {
	var parts []string
	key := func(w JobWindow) string {
		if w.Straggler == nil || w.Straggler.Rank == nil {
			return "no straggler"
		}
		return fmt.Sprintf("rank %d in %s", *w.Straggler.Rank, w.Straggler.Stage)
	}
	for i := 0; i < len(ws); {
		k, j := key(ws[i]), i
		for j+1 < len(ws) && key(ws[j+1]) == k {
			j++
		}
		parts = append(parts, fmt.Sprintf("%.0f–%.0f s %s", ws[i].StartSec, ws[j].EndSec, k))
		i = j + 1
	}
	return strings.Join(parts, "; ")
}
