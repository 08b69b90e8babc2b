package summary

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// JobSchema tags the one summary of a run of several ranks.
const JobSchema = "pipetop-job/1"

// Job is a pipetop-job/1 document: the one summary of a run of several
// ranks that pipetop run started: each rank's totals, the straggler over
// the whole run and over time. The ranks' own files stay beside it.
type Job struct {
	Schema    string    `json:"schema"`
	Run       string    `json:"run"`
	Launcher  string    `json:"launcher"`
	WorldSize int       `json:"world_size"`
	Ranks     []JobRank `json:"ranks"`
	// Missing are the ranks below the world size that wrote no summary.
	Missing []int `json:"missing"`
	// Straggler is the straggler verdict over the whole run; null when no
	// rank held the others back.
	Straggler *verdict.Verdict `json:"straggler"`
	// OverTime is the straggler verdict of each interval of the ranks'
	// common timeline.
	OverTime []JobWindow `json:"over_time"`
	Path     string      `json:"path"`
}

// JobRank is one rank's line of the job summary.
type JobRank struct {
	Rank       int              `json:"rank"`
	Host       string           `json:"host"`
	PID        int              `json:"pid"`
	Steps      int64            `json:"steps"`
	StepMeanNs float64          `json:"step_mean_ns"`
	Stages     []ScriptStage    `json:"stages"`
	DDP        *DDP             `json:"ddp"`
	Verdict    *verdict.Verdict `json:"verdict"` // the rank's own
	Summary    string           `json:"summary"` // the rank's own file
}

// JobWindow is one interval of the run and its straggler, if any.
type JobWindow struct {
	StartSec  float64          `json:"start_sec"` // since the run's first instant
	EndSec    float64          `json:"end_sec"`
	Straggler *verdict.Verdict `json:"straggler"`
}

// Jobs groups the summaries of the ranks of each run (by run id), each
// run's by rank; the summaries of single processes are left out.
func Jobs(files []ScriptFile) map[string][]ScriptFile {
	jobs := map[string][]ScriptFile{}
	for _, f := range files {
		if r := f.RankOf; r != nil && r.WorldSize > 1 && r.Run != "" {
			jobs[r.Run] = append(jobs[r.Run], f)
		}
	}
	for _, ranks := range jobs {
		sort.Slice(ranks, func(i, j int) bool { return ranks[i].RankOf.Rank < ranks[j].RankOf.Rank })
	}
	return jobs
}

// BuildJob judges the ranks of run together and writes the job summary
// into dir (WriteJob).
func BuildJob(dir, run string, ranks []ScriptFile) (*Job, error) {
	first := ranks[0].RankOf
	j := &Job{Schema: JobSchema, Run: run, Launcher: first.Launcher, WorldSize: first.WorldSize, Missing: []int{}, OverTime: []JobWindow{}}
	have := map[int]bool{}
	var sums []verdict.RankSummary
	for _, f := range ranks {
		s := f.Script
		have[s.RankOf.Rank] = true
		j.Ranks = append(j.Ranks, JobRank{Rank: s.RankOf.Rank, Host: s.Host, PID: s.PID, Steps: s.Steps, StepMeanNs: s.StepMeanNs,
			Stages: s.Stages, DDP: s.DDP, Verdict: s.Verdict, Summary: f.Path})
		sums = append(sums, verdict.RankSummary{Rank: s.RankOf.Rank, PID: s.PID, Host: s.Host, Summary: s.Whole()})
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
	if err := WriteJob(j); err != nil {
		return nil, err
	}
	return j, nil
}

// WriteJob writes the job summary to its Path, atomically.
func WriteJob(j *Job) error {
	if err := writeJSON(j.Path, j); err != nil {
		return fmt.Errorf("write the job summary of run %s: %w", j.Run, err)
	}
	return nil
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
func overTime(ranks []ScriptFile) []JobWindow {
	common := map[int64]int{}
	for _, f := range ranks {
		for _, p := range f.Timeline {
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
	out := []JobWindow{}
	for i := 1; i < len(ts); i++ {
		var sums []verdict.RankSummary
		for _, f := range ranks {
			a, b := pointAt(f.Timeline, ts[i-1]), pointAt(f.Timeline, ts[i])
			sums = append(sums, verdict.RankSummary{Rank: f.RankOf.Rank, PID: f.PID, Host: f.Host, Summary: between(a, b)})
		}
		w := JobWindow{StartSec: float64(ts[i-1]-ts[0]) / 1e9, EndSec: float64(ts[i]-ts[0]) / 1e9}
		if v, ok := verdict.DiagnoseRanks(sums); ok {
			w.Straggler = &v
		}
		out = append(out, w)
	}
	return out
}

// pointAt is the point of tl at instant t (there is one: t is common).
func pointAt(tl []TimePoint, t int64) TimePoint {
	for _, p := range tl {
		if p.T == t {
			return p
		}
	}
	return TimePoint{}
}

// between is the summary of the steps between two points of a timeline.
func between(a, b TimePoint) stage.Summary {
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
