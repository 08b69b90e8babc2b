package bisect

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/loadertext"
)

// WriteTable prints the report in 80 columns: the phases' table (with a
// row per rank in a run of several), the cold phase's finding, the
// loader's statistics, the threads that waited for a CPU, each phase's
// notes, own verdict and failure, and the verdict.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "bisect: %s (%g s a phase)\n", strings.Join(r.Command, " "), r.SecondsPerPhase)
	fmt.Fprintln(w, "stage columns: % of the mean step; GPU: % of the step the GPU was busy;")
	fmt.Fprintln(w, "peak RSS: the script's processes, bisect's cache of batches counted apart")
	t := verdict.NewPhaseTable(r.Phases, true)
	fmt.Fprintln(w, t.Header())
	for _, p := range r.Phases {
		fmt.Fprintln(w, t.Row(p))
		for _, rk := range p.Ranks {
			fmt.Fprintln(w, t.RankRow(rk))
		}
	}
	if c, ok := verdict.ColdFinding(r.Phases); ok {
		verdict.WriteWrapped(w, "cold: ", c.Words())
	}
	r.writeCache(w)
	r.WriteLoader(w)
	r.writeWaiting(w)
	for _, p := range r.Phases {
		writePhase(w, p)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "interrupted: the phases above are those that ran")
	}
	fmt.Fprintln(w)
	verdict.WriteWrapped(w, "verdict: ", r.Verdict.Headline)
	verdict.WriteWrapped(w, "next:    ", r.Verdict.Next)
}

// WriteLoader prints the loader phase's statistics: its workers and read
// amplification, then each source it read (Zarr arrays, HDF5 datasets,
// video streams) and the batches' trip from the workers.
func (r *Report) WriteLoader(w io.Writer) {
	for _, p := range r.Phases {
		if l := p.Loader; l != nil && p.Name == verdict.PhaseLoader && p.Measured() {
			fmt.Fprintln(w, "loader: "+loaderText(l))
			for _, src := range loadertext.Sources(l) {
				verdict.WriteWrapped(w, "  "+src.Kind+": ", src.Text)
			}
		}
	}
}

// loaderText is the loader's workers and read amplification (when its
// reads were counted).
func loaderText(l *stage.LoaderStats) string {
	text := "no workers (batches load on the training thread)"
	if l.Workers > 0 {
		text = fmt.Sprintf("%d workers busy %.0f %%", l.Workers, 100*l.WorkerBusy)
	}
	if l.ReadAmp > 0 {
		text += fmt.Sprintf(", read amplification %.1fx", l.ReadAmp)
	}
	return text
}

// writeCache prints the cache each cached phase kept: bisect's own
// memory, outside its peak RSS column.
func (r *Report) writeCache(w io.Writer) {
	for _, p := range r.Phases {
		if p.CacheBatches > 0 {
			fmt.Fprintf(w, "%s: %d batches cached (%s), bisect's own memory, not in its peak RSS\n",
				p.Name, p.CacheBatches, units.Bytes(float64(p.CacheBytes)))
		}
	}
}

// writeWaiting prints the threads that waited for a CPU in each phase.
func (r *Report) writeWaiting(w io.Writer) {
	var parts []string
	for _, p := range r.Phases {
		if p.Waiting != nil {
			parts = append(parts, fmt.Sprintf("%s %.1f", p.Name, *p.Waiting))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "threads waiting for a CPU (mean): %s\n", strings.Join(parts, ", "))
	}
}

// writePhase prints a phase's notes, its straggler, its own verdict and,
// when it failed, the end of its stderr.
func writePhase(w io.Writer, p verdict.PhaseResult) {
	label := p.Name + ": "
	for _, n := range p.Notes {
		verdict.WriteWrapped(w, label, n)
		label = strings.Repeat(" ", len(label))
	}
	if slow, fast, ok := p.Straggler(); ok && p.Measured() {
		verdict.WriteWrapped(w, label, fmt.Sprintf("straggler: rank %d delivers %.1f samples/s, %.2fx rank %d's %.1f",
			slow.Rank, slow.SamplesPerSec, slow.SamplesPerSec/fast.SamplesPerSec, fast.Rank, fast.SamplesPerSec))
		label = strings.Repeat(" ", len(label))
	}
	if p.Verdict != nil && p.Measured() {
		verdict.WriteWrapped(w, label, "own verdict: "+p.Verdict.Headline)
	}
	if p.Status == verdict.PhaseFailed && p.StderrTail != "" {
		fmt.Fprintf(w, "%s: the end of its stderr:\n", p.Name)
		for _, line := range strings.Split(p.StderrTail, "\n") {
			fmt.Fprintf(w, "  | %s\n", line)
		}
	}
}

// ReadReport reads a pipetop bisect --json file.
func ReadReport(path string) (Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Report{}, err
	}
	r, err := DecodeReport(b)
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// DecodeReport decodes a bisect report, checking its schema.
func DecodeReport(b []byte) (Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return Report{}, fmt.Errorf("not a bisect report: %w", err)
	}
	if r.Schema != Schema {
		return Report{}, fmt.Errorf("schema %q, want %q (a pipetop bisect --json file)", r.Schema, Schema)
	}
	return r, nil
}
