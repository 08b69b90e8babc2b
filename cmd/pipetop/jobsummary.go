package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// rankOf is who wrote a run summary: the launcher's rank, world size and
// run id (the summary's rank_of; absent for a single process).
type rankOf struct {
	Launcher  string `json:"launcher"`
	Rank      int    `json:"rank"`
	WorldSize int    `json:"world_size"`
	LocalRank *int   `json:"local_rank,omitempty"`
	Run       string `json:"run"`
}

// ddpDetail is a rank's DDP gradient buckets over the run (the summary's
// ddp section, written by the Python instrumentation's comm hook).
type ddpDetail struct {
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

// timePoint is a rank's run totals at one instant of its timeline.
type timePoint struct {
	T      int64            `json:"t"`
	Steps  int64            `json:"steps"`
	WallNs int64            `json:"wall_ns"`
	Stages map[string]int64 `json:"stages"`
}

// jobSchema tags the one summary of a run of several ranks.
const jobSchema = "pipetop-job/1"

// jobSummary is the one summary of a run of several ranks that pipetop
// run started: each rank's totals, the straggler over the whole run and
// over time. The ranks' own files stay beside it.
type jobSummary struct {
	Schema    string    `json:"schema"`
	Run       string    `json:"run"`
	Launcher  string    `json:"launcher"`
	WorldSize int       `json:"world_size"`
	Ranks     []jobRank `json:"ranks"`
	// Missing are the ranks below the world size that wrote no summary.
	Missing []int `json:"missing"`
	// Straggler is the straggler verdict over the whole run; null when no
	// rank held the others back.
	Straggler *verdict.Verdict `json:"straggler"`
	// OverTime is the straggler verdict of each interval of the ranks'
	// common timeline.
	OverTime []jobWindow `json:"over_time"`
	Path     string      `json:"path"`
}

// jobRank is one rank's line of the job summary.
type jobRank struct {
	Rank       int              `json:"rank"`
	Host       string           `json:"host"`
	PID        int              `json:"pid"`
	Steps      int64            `json:"steps"`
	StepMeanNs float64          `json:"step_mean_ns"`
	Stages     []runStage       `json:"stages"`
	DDP        *ddpDetail       `json:"ddp"`
	Verdict    *verdict.Verdict `json:"verdict"` // the rank's own
	Summary    string           `json:"summary"` // the rank's own file
}

// jobWindow is one interval of the run and its straggler, if any.
type jobWindow struct {
	StartSec  float64          `json:"start_sec"` // since the run's first instant
	EndSec    float64          `json:"end_sec"`
	Straggler *verdict.Verdict `json:"straggler"`
}

// rankDoc is a rank's summary and where it was read from.
type rankDoc struct {
	s    *scriptSummary
	path string
}

// jobsOf groups the summaries of the ranks of each run (by run id); the
// summaries of single processes are left out.
func jobsOf(docs []rankDoc) map[string][]rankDoc {
	jobs := map[string][]rankDoc{}
	for _, d := range docs {
		if r := d.s.RankOf; r != nil && r.WorldSize > 1 && r.Run != "" {
			jobs[r.Run] = append(jobs[r.Run], d)
		}
	}
	for _, ranks := range jobs {
		sort.Slice(ranks, func(i, j int) bool { return ranks[i].s.RankOf.Rank < ranks[j].s.RankOf.Rank })
	}
	return jobs
}

// buildJob judges the ranks of one run together and writes the job
// summary into dir.
func buildJob(dir, run string, ranks []rankDoc) (*jobSummary, error) {
	first := ranks[0].s.RankOf
	j := &jobSummary{Schema: jobSchema, Run: run, Launcher: first.Launcher, WorldSize: first.WorldSize, Missing: []int{}, OverTime: []jobWindow{}}
	have := map[int]bool{}
	var sums []verdict.RankSummary
	for _, d := range ranks {
		s := d.s
		have[s.RankOf.Rank] = true
		j.Ranks = append(j.Ranks, jobRank{Rank: s.RankOf.Rank, Host: s.Host, PID: s.PID, Steps: s.Steps, StepMeanNs: s.StepMeanNs,
			Stages: s.Stages, DDP: s.DDP, Verdict: s.Verdict, Summary: d.path})
		sums = append(sums, verdict.RankSummary{Rank: s.RankOf.Rank, PID: s.PID, Host: s.Host, Summary: s.stageSummary()})
	}
	for r := 0; r < j.WorldSize; r++ {
		if !have[r] {
			j.Missing = append(j.Missing, r)
		}
	}
	if v, ok := verdict.DiagnoseRanks(sums); ok {
		j.Straggler = &v
	}
	j.OverTime = overTime(ranks)
	j.Path = filepath.Join(dir, "pipetop-job-"+safeName(run)+".json")
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("job summary of run %s: %w", run, err)
	}
	tmp := j.Path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("write the job summary of run %s: %w", run, err)
	}
	if err := os.Rename(tmp, j.Path); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("write the job summary of run %s: %w", run, err)
	}
	return j, nil
}

// safeName makes a run id usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// overTime applies the straggler rule to each interval between the
// instants every rank's timeline has (the ranks mark the same multiples of
// an interval, which doubles as a run grows).
func overTime(ranks []rankDoc) []jobWindow {
	common := map[int64]int{}
	for _, d := range ranks {
		for _, p := range d.s.Timeline {
			common[p.T]++
		}
	}
	var ts []int64
	for t, n := range common {
		if n == len(ranks) {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	out := []jobWindow{}
	for i := 1; i < len(ts); i++ {
		var sums []verdict.RankSummary
		for _, d := range ranks {
			a, b := pointAt(d.s.Timeline, ts[i-1]), pointAt(d.s.Timeline, ts[i])
			sums = append(sums, verdict.RankSummary{Rank: d.s.RankOf.Rank, PID: d.s.PID, Host: d.s.Host, Summary: between(a, b)})
		}
		w := jobWindow{StartSec: float64(ts[i-1]-ts[0]) / 1e9, EndSec: float64(ts[i]-ts[0]) / 1e9}
		if v, ok := verdict.DiagnoseRanks(sums); ok {
			w.Straggler = &v
		}
		out = append(out, w)
	}
	return out
}

// pointAt is the point of tl at instant t (there is one: t is common).
func pointAt(tl []timePoint, t int64) timePoint {
	for _, p := range tl {
		if p.T == t {
			return p
		}
	}
	return timePoint{}
}

// between is the summary of the steps between two points of a timeline.
func between(a, b timePoint) stage.Summary {
	steps, wall := b.Steps-a.Steps, b.WallNs-a.WallNs
	s := stage.Summary{Steps: int(steps)}
	if steps <= 0 || wall <= 0 {
		return s
	}
	s.WallMean = float64(wall) / float64(steps)
	names := make([]string, 0, len(b.Stages))
	for n := range b.Stages {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := float64(b.Stages[n] - a.Stages[n])
		s.Stages = append(s.Stages, stage.StageStat{Name: n, Mean: d / float64(steps), Share: d / float64(wall)})
	}
	return s
}

// printJob writes the job summary: one line per rank, the straggler over
// the run and over time, the DDP buckets, and where the files are.
func printJob(w io.Writer, j *jobSummary) {
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
		switch d := r.DDP; {
		case d == nil:
		case d.Reduced > 0:
			fmt.Fprintf(w, "  ddp rank %d: %.1f buckets a step, %s a step, bucket ready to reduced %s mean, %s max (hook %s)\n", r.Rank,
				d.BucketsPerStep, units.Bytes(d.BytesPerStep), units.Dur(d.ReadyToDoneMeanNs), units.Dur(float64(d.ReadyToDoneMaxNs)), strings.Join(d.Hooks, ", "))
		default:
			fmt.Fprintf(w, "  ddp rank %d: %.1f buckets a step, %s a step; DDP's sampled backward: compute %s, comm %s\n", r.Rank,
				d.BucketsPerStep, units.Bytes(d.BytesPerStep), units.Dur(d.DDPComputeNs), units.Dur(d.DDPCommNs))
		}
	}
	fmt.Fprintf(w, "  job summary: %s (each rank's own beside it)\n", j.Path)
}

// jobColumns are the stages any rank has, in the first rank's order.
func jobColumns(j *jobSummary) []string {
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
func stageCell(stages []runStage, name string) string {
	for _, st := range stages {
		if st.Name == name {
			return units.Pct(st.Share)
		}
	}
	return "-"
}

// overTimeLine merges consecutive intervals with the same straggler (rank
// and stage) into one phrase each.
func overTimeLine(ws []jobWindow) string {
	var parts []string
	key := func(w jobWindow) string {
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
