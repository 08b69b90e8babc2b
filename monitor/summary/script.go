package summary

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/judge"
)

// ScriptSchema tags the end-of-run summary the Python publisher writes at
// the end of a process under pipetop run (pipetop-summary-NAME-PID.json,
// docs/python.md). Version 2 added host_cpu; ScriptSchemaV1 files, which
// lack it, still read.
const (
	ScriptSchema   = "pipetop-summary/2"
	ScriptSchemaV1 = "pipetop-summary/1"
)

// Script is a pipetop-summary/2 (or /1) document: one Python process's
// whole run. pipetop run adds the CPU readings it kept and the verdict to
// it (Judge, ReadScripts).
type Script struct {
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
	Stages        []ScriptStage      `json:"stages"`
	FirstStep     *FirstStep         `json:"first_step"`
	Loader        *stage.LoaderStats `json:"loader"`
	// Stacks are the run's stack samples (a stacks frame's body), null
	// without any.
	Stacks  *stage.StackSamples `json:"stacks"`
	Verdict *verdict.Verdict    `json:"verdict,omitempty"`
	// RankOf is the launcher's rank of the process, null for a single one;
	// Host is where it ran.
	RankOf *RankOf `json:"rank_of,omitempty"`
	Host   string  `json:"host,omitempty"`
	// DDP is the DDP gradient buckets' detail, null without DDP.
	DDP *DDP `json:"ddp,omitempty"`
	// Timeline is the run's totals at fixed instants (for the job
	// summary over time).
	Timeline []TimePoint `json:"timeline,omitempty"`
	// Recent are the run's newest steps one by one, for the pattern of
	// its pauses; nil in files written before they were.
	Recent *RecentSteps `json:"recent,omitempty"`
	// IO is the process's write counters at the end, nil when unread.
	IO *ScriptIO `json:"io,omitempty"`
	// HostCPU is the run's threads and CPU over the run as pipetop run
	// read them, added by pipetop run; null when unread (and in /1 files).
	HostCPU *RunCPU `json:"host_cpu,omitempty"`
	// PauseCode is the training thread's own samples of the run's
	// periodic pauses, one group per paused stage, as pipetop run's live
	// view last told them from the rest of the steps (the whole-run Stacks
	// cannot: they are one frame); added by pipetop run, nil when none.
	PauseCode []stage.CodeGroup `json:"pause_code,omitempty"`
	// RSS is the trainer's resident memory at the end of the run (the
	// newest KeptRSS readings), as pipetop run read it; nil when unread.
	RSS *verdict.Series `json:"rss,omitempty"`
	// code is the profile of Stacks, set by Judge.
	code *stage.CodeProfile
}

// ScriptStage is one stage's whole-run total.
type ScriptStage struct {
	Name    string  `json:"name"`
	TotalNs int64   `json:"total_ns"`
	MeanNs  float64 `json:"mean_ns"`
	Share   float64 `json:"share"`
}

// FirstStep is the first step alone, which carries the start-up.
type FirstStep struct {
	WallNs int64 `json:"wall_ns"`
	Stages []struct {
		Name  string `json:"name"`
		CPUNs int64  `json:"cpu_ns"`
	} `json:"stages"`
}

// RankOf is who wrote a run summary: the launcher's rank, world size and
// run id (the summary's rank_of; absent for a single process).
type RankOf struct {
	Launcher  string `json:"launcher"`
	Rank      int    `json:"rank"`
	WorldSize int    `json:"world_size"`
	LocalRank *int   `json:"local_rank,omitempty"`
	Run       string `json:"run"`
}

// DDP is a rank's DDP gradient buckets over the run (the summary's ddp
// section, written by the Python instrumentation's comm hook).
type DDP struct {
	Hooks             []string `json:"hooks"`
	Buckets           int64    `json:"buckets"`
	BucketsPerStep    float64  `json:"buckets_per_step"`
	Bytes             int64    `json:"bytes"`
	BytesPerStep      float64  `json:"bytes_per_step"`
	Reduced           int64    `json:"reduced"`
	ReadyToDoneMeanNs float64  `json:"ready_to_done_mean_ns"`
	ReadyToDoneMaxNs  int64    `json:"ready_to_done_max_ns"`
	// Without pipetop's hook: DDP's own bucket sizes and its sampled
	// times of one backward (comm from the first bucket's reduction
	// started to the last one's done).
	BucketBytes  []int64 `json:"bucket_bytes,omitempty"`
	DDPCommNs    float64 `json:"ddp_backward_comm_ns,omitempty"`
	DDPComputeNs float64 `json:"ddp_backward_compute_ns,omitempty"`
}

// TimePoint is a rank's run totals at one instant of its timeline.
type TimePoint struct {
	T      int64            `json:"t"`
	Steps  int64            `json:"steps"`
	WallNs int64            `json:"wall_ns"`
	Stages map[string]int64 `json:"stages"`
}

// RecentSteps are a run's newest steps (at most 4,096): the stage list
// and one row a step of step number, start and end (Unix ns) and each
// stage's CPU ns in the list's order.
type RecentSteps struct {
	Names []string  `json:"names"`
	Steps [][]int64 `json:"steps"`
}

// ScriptIO is a process's write counters (/proc/PID/io): bytes through
// write calls (wchar) and bytes that reached the disk.
type ScriptIO struct {
	WChar      int64 `json:"wchar"`
	WriteBytes int64 `json:"write_bytes"`
}

// pauses sets the patterns of out's data_wait and pause stages from the
// recent steps (out's means stay the whole run's).
func (r *RecentSteps) pauses(out *stage.Summary) {
	if s, ok := r.summarize(0); ok {
		out.Waits, out.Pauses = s.Waits, s.Pauses
	}
}

// summarize summarizes the recent steps that started at or after fromNs;
// ok is false when none did (or the file has none).
func (r *RecentSteps) summarize(fromNs int64) (stage.Summary, bool) {
	if r == nil || len(r.Names) == 0 || len(r.Names) > stage.MaxStages {
		return stage.Summary{}, false
	}
	w := stage.NewStepRing(r.Names, len(r.Steps))
	for _, row := range r.Steps {
		if len(row) != 3+len(r.Names) || row[2] < row[1] || row[1] < fromNs {
			continue // not a step row, or too early: left out
		}
		rec := stage.RecordOf(row[0], row[1], row[2], 0, row[3:], nil)
		w.Add(&rec)
	}
	if w.Len() == 0 {
		return stage.Summary{}, false
	}
	return w.Summarize(0), true
}

// ioHost is the host readings the file has: the bytes a second the
// process wrote over its steps, for the size of a checkpoint; nil when
// unknown.
func (s *Script) ioHost() *verdict.Host {
	if s.IO == nil || s.WallNs <= 0 {
		return nil
	}
	h := &verdict.Host{}
	h.Writes.Add(s.EndNs, float64(s.IO.WChar)/(float64(s.WallNs)/1e9))
	return h
}

// ReadScript reads the pipetop-summary/2 (or /1) file at path; its stack
// samples, if any, are checked.
func ReadScript(path string) (Script, error) {
	var s Script
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read run summary: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("run summary %s: %w", path, err)
	}
	if !knownSchema(s.Schema) {
		return s, fmt.Errorf("run summary %s: schema %q, want %q", path, s.Schema, ScriptSchema)
	}
	if s.Stacks != nil {
		if err := s.Stacks.Validate(); err != nil {
			return s, fmt.Errorf("run summary %s: %w", path, err)
		}
	}
	return s, nil
}

// DecodeScript decodes b, the bytes of the file at path, as a run
// summary; ok is false for anything that is not one (no pipetop-summary
// schema), and err names path for one of another version.
func DecodeScript(b []byte, path string) (s Script, ok bool, err error) {
	if json.Unmarshal(b, &s) != nil || !strings.HasPrefix(s.Schema, "pipetop-summary/") {
		return Script{}, false, nil
	}
	if !knownSchema(s.Schema) {
		return Script{}, true, fmt.Errorf("%s: summary schema %q, this pipetop reads %q", path, s.Schema, ScriptSchema)
	}
	return s, true, nil
}

// knownSchema reports whether this pipetop reads run summaries of schema.
func knownSchema(schema string) bool { return schema == ScriptSchema || schema == ScriptSchemaV1 }

// Whole turns the whole-run totals into the window summary the verdict
// rules read (means only: no percentiles over a whole run), with the
// pattern of the pauses of the run's newest steps when the file has them.
// The first step, which carries the start-up (the loader's workers, lazy
// initialisation; the text gives it a line of its own), is left out of
// the means of a run of more steps: a DataLoader's 1.5 s worker start is
// not every step's input wait.
func (s *Script) Whole() stage.Summary {
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
	s.withoutFirst(&out)
	s.Recent.pauses(&out)
	return out
}

// withoutFirst takes the first step out of out's means and shares, when
// the file has it and the run has more steps.
func (s *Script) withoutFirst(out *stage.Summary) {
	f := s.FirstStep
	if f == nil || s.Steps < 2 || f.WallNs <= 0 || f.WallNs >= s.WallNs {
		return
	}
	first := map[string]int64{}
	for _, st := range f.Stages {
		first[st.Name] = st.CPUNs
	}
	n, wall := float64(s.Steps-1), float64(s.WallNs-f.WallNs)
	out.WallMean = wall / n
	for i, st := range s.Stages {
		total := float64(max(0, st.TotalNs-first[st.Name]))
		out.Stages[i].Mean, out.Stages[i].Share = total/n, total/wall
	}
}

// Judge sets the verdict of the whole run (and the profile of its stack
// samples, which the text names the hot code of), with the CPU rules over
// HostCPU, the pauses' code of PauseCode and memory creep over RSS when
// pipetop run kept them.
func (s *Script) Judge() verdict.Verdict {
	s.code = stage.ProfileOf(s.Stacks)
	if s.code != nil {
		s.code.Pauses = s.PauseCode
	}
	w := judge.Window{Summary: s.Whole(), Loader: s.Loader, Code: s.code, Host: s.ioHost()}
	if s.RSS != nil {
		w.RSS = *s.RSS
	}
	if c := s.HostCPU.HostCPU(); c != nil {
		if w.Host == nil {
			w.Host = &verdict.Host{}
		}
		w.Host.CPU = c
	}
	s.withEnd(&w)
	v := judge.Verdict(w)
	s.Verdict = &v
	return v
}

// Run is the summary as a Run read from path (what pipetop compare and
// report read). It has no buckets, so comparisons with it use
// DefaultSpread.
func (s *Script) Run(path string) Run {
	r := Run{Version: Version, Name: s.Name, PID: s.PID, Source: path, DurationSec: float64(s.WallNs) / 1e9,
		StartNs: s.EndNs - s.WallNs, Throughput: []Point{}, Verdicts: []Period{}}
	r.Whole = s.Whole()
	r.Whole.LastStep = 0 // a Run read from a summary file never held the last step's number
	if s.Verdict != nil {
		r.Verdict = *s.Verdict
	}
	return r
}

// AddVerdict writes the verdict v into the summary file at path,
// atomically; every other field of the file stays as it is.
func AddVerdict(path string, v verdict.Verdict) error {
	if err := amend(path, map[string]any{"verdict": v}); err != nil {
		return fmt.Errorf("add the verdict to %s: %w", path, err)
	}
	return nil
}

// addJudged writes the verdict v and what pipetop run kept, k, into the
// summary file at path, atomically, raising its schema to ScriptSchema;
// every other field stays as it is.
func addJudged(path string, v verdict.Verdict, k Kept) error {
	fields := map[string]any{"verdict": v, "schema": ScriptSchema}
	if k.CPU != nil {
		fields["host_cpu"] = k.CPU
	}
	if len(k.Pauses) > 0 {
		fields["pause_code"] = k.Pauses
	}
	if k.RSS != nil {
		fields["rss"] = k.RSS
	}
	if k.Stacks != nil {
		fields["stacks"] = k.Stacks
	}
	if err := amend(path, fields); err != nil {
		return fmt.Errorf("add the verdict and what pipetop run kept to %s: %w", path, err)
	}
	return nil
}

// amend sets fields of the JSON object in the file at path, atomically.
func amend(path string, fields map[string]any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	maps.Copy(doc, fields)
	return writeJSON(path, doc)
}

// writeJSON writes v to path as indented JSON, atomically.
func writeJSON(path string, v any) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ScriptFile is a run summary and the file it was read from.
type ScriptFile struct {
	*Script
	Path string
}

// Kept is what pipetop run keeps of a process it started, as its live
// view read it, for the end-of-run verdict: the CPU readings (nil when
// none), the trainer's resident memory (nil when unread), the code of the
// periodic pauses the live view last told from the rest of the steps and
// the stack samples read from outside it.
type Kept struct {
	CPU    *RunCPU
	Pauses []stage.CodeGroup
	RSS    *verdict.Series
	// Stacks are the whole run's stack samples pipetop read from outside
	// the process (package stacks; nil: none), added to the summary's.
	Stacks *stage.StackSamples
}

// ReadScripts reads the run summaries (pipetop-summary-*.json) written
// in dir since start, in the order of their names, and judges each one,
// adding its verdict to its file. kept, when it holds the process's pid,
// is what pipetop run kept of it: it is judged with the summary and added
// to its file. A file that cannot be read or updated is an error of errs,
// the others are read.
func ReadScripts(dir string, start time.Time, kept map[int]Kept) (files []ScriptFile, errs []error, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "pipetop-summary-*.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("find run summaries in %s: %w", dir, err)
	}
	sort.Strings(paths)
	files = []ScriptFile{}
	for _, p := range paths {
		s, err := ReadScript(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if s.EndNs < start.UnixNano() {
			continue // an earlier run's
		}
		if k, ok := kept[s.PID]; ok {
			s.HostCPU, s.PauseCode, s.RSS = k.CPU, k.Pauses, k.RSS
			if k.Stacks != nil {
				s.Stacks = stage.MergeStacks(s.Stacks, k.Stacks)
				k.Stacks = s.Stacks
			}
			err = addJudged(p, s.Judge(), k)
		} else {
			err = AddVerdict(p, s.Judge())
		}
		if err != nil {
			errs = append(errs, err)
		}
		files = append(files, ScriptFile{Script: &s, Path: p})
	}
	return files, errs, nil
}
