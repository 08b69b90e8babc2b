package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// scriptSummary is the end-of-run document the instrumented Python process
// writes (schema pipetop-summary/1, docs/python.md); pipetop run adds the
// verdict.
type scriptSummary struct {
	Schema        string             `json:"schema"`
	Name          string             `json:"name"`
	PID           int                `json:"pid"`
	EndNs         int64              `json:"end_ns"`
	Steps         int64              `json:"steps"`
	Samples       int64              `json:"samples"`
	WallNs        int64              `json:"wall_ns"`
	StepMeanNs    float64            `json:"step_mean_ns"`
	StepsPerSec   float64            `json:"steps_per_sec"`
	SamplesPerSec float64            `json:"samples_per_sec"`
	Stages        []runStage         `json:"stages"`
	FirstStep     *firstStep         `json:"first_step"`
	Loader        *stage.LoaderStats `json:"loader"`
	// Stacks are the run's stack samples (a stacks frame's body), null
	// without any.
	Stacks  *stage.StackSamples `json:"stacks"`
	Verdict *verdict.Verdict    `json:"verdict,omitempty"`
	// RankOf is the launcher's rank of the process, null for a single one;
	// Host is where it ran.
	RankOf *rankOf `json:"rank_of,omitempty"`
	Host   string  `json:"host,omitempty"`
	// DDP is the DDP gradient buckets' detail, null without DDP.
	DDP *ddpDetail `json:"ddp,omitempty"`
	// Timeline is the run's totals at fixed instants (for the job
	// summary over time).
	Timeline []timePoint `json:"timeline,omitempty"`
	// code is the profile of Stacks.
	code *stage.CodeProfile
}

// runStage is one stage's whole-run total.
type runStage struct {
	Name    string  `json:"name"`
	TotalNs int64   `json:"total_ns"`
	MeanNs  float64 `json:"mean_ns"`
	Share   float64 `json:"share"`
}

// firstStep is the first step alone, which carries the start-up.
type firstStep struct {
	WallNs int64 `json:"wall_ns"`
	Stages []struct {
		Name  string `json:"name"`
		CPUNs int64  `json:"cpu_ns"`
	} `json:"stages"`
}

// summarySchema is the schema tag pipetop run understands.
const summarySchema = "pipetop-summary/1"

// report finds the summaries written since start in dir, adds the verdict
// to each (and to its file), and prints them: a table on stderr, or a JSON
// array on stdout. The ranks of one run get one job summary instead
// (printJob, a pipetop-job/1 document in the array), written beside their
// own files.
func report(dir string, start time.Time, asJSON bool, stdout, stderr io.Writer) error {
	docs, err := readSummaries(dir, start, stderr)
	if err != nil {
		return err
	}
	jobs := jobsOf(docs)
	out := []any{}
	for _, d := range docs {
		if r := d.s.RankOf; r != nil && len(jobs[r.Run]) > 0 && r.WorldSize > 1 {
			if jobs[r.Run][0].path != d.path {
				continue // the job is reported once, at its first rank
			}
			j, err := buildJob(dir, r.Run, jobs[r.Run])
			if err != nil {
				fmt.Fprintln(stderr, "pipetop:", err)
				continue
			}
			out = append(out, j)
			if !asJSON {
				printJob(stderr, j)
			}
			continue
		}
		out = append(out, d.s)
		if !asJSON {
			printSummary(stderr, d.s, d.path)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(docs) == 0 {
		fmt.Fprintln(stderr, "pipetop: no training step was seen (no optimizer step in an instrumented Python process), so there is no run summary")
	}
	return nil
}

// readSummaries reads the summaries written since start in dir, by path,
// and adds each one's verdict (also to its file).
func readSummaries(dir string, start time.Time, stderr io.Writer) ([]rankDoc, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "pipetop-summary-*.json"))
	if err != nil {
		return nil, fmt.Errorf("find run summaries in %s: %w", dir, err)
	}
	sort.Strings(paths)
	docs := []rankDoc{}
	for _, p := range paths {
		s, ok, err := readSummary(p, start)
		if err != nil {
			fmt.Fprintln(stderr, "pipetop:", err)
			continue
		}
		if !ok {
			continue
		}
		s.code = stage.ProfileOf(s.Stacks)
		v := verdict.Judge(verdict.Inputs{Summary: s.stageSummary(), Loader: s.Loader, Code: s.code})
		s.Verdict = &v
		if err := addVerdict(p, v); err != nil {
			fmt.Fprintln(stderr, "pipetop:", err)
		}
		docs = append(docs, rankDoc{s: &s, path: p})
	}
	return docs, nil
}

// readSummary reads one summary file; ok is false for one written before
// start (an earlier run's).
func readSummary(path string, start time.Time) (s scriptSummary, ok bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return s, false, fmt.Errorf("read run summary: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("run summary %s: %w", path, err)
	}
	if s.Schema != summarySchema {
		return s, false, fmt.Errorf("run summary %s: schema %q, want %q", path, s.Schema, summarySchema)
	}
	if s.Stacks != nil {
		if err := s.Stacks.Validate(); err != nil {
			return s, false, fmt.Errorf("run summary %s: %w", path, err)
		}
	}
	return s, s.EndNs >= start.UnixNano(), nil
}

// stageSummary turns the whole-run totals into the window summary the
// verdict rules read (means only: no percentiles over a whole run).
func (s *scriptSummary) stageSummary() stage.Summary {
	out := stage.Summary{
		Steps:         int(s.Steps),
		SpanNs:        s.WallNs,
		WallMean:      s.StepMeanNs,
		StepsPerSec:   s.StepsPerSec,
		SamplesPerSec: s.SamplesPerSec,
		LastStep:      s.Steps - 1,
	}
	for _, st := range s.Stages {
		out.Stages = append(out.Stages, stage.StageStat{Name: st.Name, Mean: st.MeanNs, Share: st.Share})
	}
	return out
}

// addVerdict writes the verdict into the summary file at path, atomically.
func addVerdict(path string, v verdict.Verdict) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("add the verdict to %s: %w", path, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("add the verdict to %s: %w", path, err)
	}
	doc["verdict"] = v
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("add the verdict to %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("add the verdict to %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("add the verdict to %s: %w", path, err)
	}
	return nil
}

// printSummary writes the stage table, throughput, loader line and verdict.
func printSummary(w io.Writer, s *scriptSummary, path string) {
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
		for _, a := range l.Zarr {
			fmt.Fprintf(w, "  zarr: %s\n", zarrLine(&a))
		}
	}
	for _, line := range hotLines(s.code) {
		fmt.Fprintf(w, "  hot code: %s\n", line)
	}
	if v := s.Verdict; v != nil {
		fmt.Fprintf(w, "  verdict: %s\n  next: %s\n", v.Headline, v.Next)
	}
	fmt.Fprintf(w, "  summary: %s\n", path)
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

// zarrLine describes one Zarr array's reads over the run.
func zarrLine(a *stage.ZarrArray) string {
	return fmt.Sprintf("%s chunks %v, %d reads (%.1f frames each), read amplification %.1fx (%s decoded for %s returned)",
		a.Name(), a.Chunks, a.Calls, a.FramesPerCall(), a.ReadAmp, units.Bytes(float64(a.BytesDecoded)), units.Bytes(float64(a.BytesReturned)))
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
		who := "workers"
		if g.Role == stage.RoleTrain {
			who = "training thread in " + g.Stage
		}
		out = append(out, fmt.Sprintf("%s: %s (%d samples)", who, verdict.Phrase(g.Hot), g.Samples))
	}
	return out
}
