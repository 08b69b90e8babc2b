package tune

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/bisect"
)

// PlanSchema tags a plan: the settings the instrumentation applies inside
// an unmodified script (PIPETOP_PLAN, docs/python.md).
const PlanSchema = "pipetop-plan/1"

// Plan is what the instrumentation overrides: the arguments of the
// DataLoader made at one call site, and the intra-op threads.
type Plan struct {
	Schema  string      `json:"schema"`
	Loader  *LoaderPlan `json:"loader,omitempty"`
	Threads *ThreadPlan `json:"threads,omitempty"`
}

// LoaderPlan is the DataLoader arguments a plan sets at Site (FILE:LINE),
// the PyAV decoder threads of the video streams its processes open, and
// the float images its workers send as uint8 (converted back as the
// training step takes the batch).
type LoaderPlan struct {
	Site              string     `json:"site,omitempty"`
	NumWorkers        *int       `json:"num_workers,omitempty"`
	PrefetchFactor    *int       `json:"prefetch_factor,omitempty"`
	PersistentWorkers *bool      `json:"persistent_workers,omitempty"`
	WorkerThreads     *int       `json:"worker_threads,omitempty"`
	VideoThreads      *int       `json:"video_threads,omitempty"`
	Uint8             []Uint8Key `json:"uint8,omitempty"`
}

// Uint8Key is a float image of the batch sent as uint8: where it sits in
// the batch (stage.TripTensor's Key), its scale (1: integers 0..255; 255:
// multiples of 1/255 in [0, 1]) and the dtype it is turned back into.
type Uint8Key struct {
	Key   string `json:"key"`
	Scale int    `json:"scale"`
	DType string `json:"dtype"`
}

// ThreadPlan is the main process's intra-op threads.
type ThreadPlan struct {
	Main *int `json:"main,omitempty"`
}

// Setting is one combination of the settings tune tries. Zero
// PrefetchFactor, WorkerThreads and MainThreads leave torch's default (or
// the script's own choice).
type Setting struct {
	NumWorkers        int  `json:"num_workers"`
	PrefetchFactor    int  `json:"prefetch_factor,omitempty"`
	PersistentWorkers bool `json:"persistent_workers"`
	WorkerThreads     int  `json:"worker_threads,omitempty"`
	MainThreads       int  `json:"main_threads,omitempty"`
	// VideoThreads is each PyAV video stream's decoder threads (frame and
	// slice threading), 0 for PyAV's default.
	VideoThreads int `json:"video_threads,omitempty"`
	// Uint8 sends the batch's float images that uint8 holds exactly as
	// uint8 from the workers, converted back in the training step.
	Uint8 bool `json:"uint8,omitempty"`
}

// baseline is the setting the script makes its training DataLoader with.
func baseline(d *verdict.DataLoaderCall) Setting {
	s := Setting{NumWorkers: d.NumWorkers, PersistentWorkers: d.PersistentWorkers}
	if d.PrefetchFactor != nil && d.NumWorkers > 0 {
		s.PrefetchFactor = *d.PrefetchFactor
	}
	return s
}

// String is the setting as DataLoader arguments and thread counts.
func (s Setting) String() string {
	parts := []string{fmt.Sprintf("num_workers=%d", s.NumWorkers)}
	if s.PrefetchFactor > 0 {
		parts = append(parts, fmt.Sprintf("prefetch_factor=%d", s.PrefetchFactor))
	}
	if s.PersistentWorkers {
		parts = append(parts, "persistent_workers=True")
	}
	if s.WorkerThreads > 0 {
		parts = append(parts, fmt.Sprintf("worker threads %d", s.WorkerThreads))
	}
	if s.MainThreads > 0 {
		parts = append(parts, fmt.Sprintf("main threads %d", s.MainThreads))
	}
	if s.VideoThreads > 0 {
		parts = append(parts, fmt.Sprintf("video decoder threads %d", s.VideoThreads))
	}
	if s.Uint8 {
		parts = append(parts, "uint8 transport")
	}
	return strings.Join(parts, ", ")
}

// cost orders settings by what they take: workers first, then threads,
// then prefetched batches; a setting that changes something (worker
// threads, workers kept alive) costs a little more than one that does not.
func (s Setting) cost() int {
	c := 1000*s.NumWorkers + 100*max(s.WorkerThreads, 1)*s.NumWorkers + 100*s.MainThreads + 100*s.VideoThreads*max(s.NumWorkers, 1) + 10*s.PrefetchFactor
	for _, changed := range []bool{s.PersistentWorkers, s.WorkerThreads > 0, s.VideoThreads > 0, s.Uint8} {
		if changed {
			c++
		}
	}
	return c
}

// valid says why torch would refuse s, "" when it would not: prefetching
// and persistent workers need workers.
func (s Setting) valid() string {
	if s.NumWorkers == 0 && s.PrefetchFactor > 0 {
		return "prefetch_factor needs num_workers > 0"
	}
	if s.NumWorkers == 0 && s.PersistentWorkers {
		return "persistent_workers needs num_workers > 0"
	}
	if s.NumWorkers == 0 && s.Uint8 {
		return "the uint8 transport needs num_workers > 0"
	}
	return ""
}

// plan is the plan that applies s to the DataLoader made at site; keys
// are the batch's float images that uint8 holds (for s.Uint8).
func (s Setting) plan(site string, keys []Uint8Key) Plan {
	p := Plan{Schema: PlanSchema, Loader: &LoaderPlan{Site: site, NumWorkers: &s.NumWorkers, PersistentWorkers: &s.PersistentWorkers}}
	if s.PrefetchFactor > 0 {
		p.Loader.PrefetchFactor = &s.PrefetchFactor
	}
	if s.WorkerThreads > 0 {
		p.Loader.WorkerThreads = &s.WorkerThreads
	}
	if s.VideoThreads > 0 {
		p.Loader.VideoThreads = &s.VideoThreads
	}
	if s.Uint8 {
		p.Loader.Uint8 = keys
	}
	if s.MainThreads > 0 {
		p.Threads = &ThreadPlan{Main: &s.MainThreads}
	}
	return p
}

// WritePlan writes p to dir/name and returns the environment that makes
// the instrumentation apply it, and the directory where the script's
// processes report what they applied (ReadPlanReports).
func WritePlan(p Plan, dir, name string) (env []string, out string, err error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return nil, "", fmt.Errorf("write plan: %w", err)
	}
	out = strings.TrimSuffix(path, ".json") + ".out"
	if err := os.MkdirAll(out, 0o700); err != nil {
		return nil, "", fmt.Errorf("plan reports: %w", err)
	}
	return []string{"PIPETOP_PLAN=" + path, "PIPETOP_PLAN_OUT=" + out}, out, nil
}

// PlanOf reads the plan a file holds: a pipetop tune report's winner, or
// a plan itself.
func PlanOf(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Plan{}, fmt.Errorf("%s: not JSON: %w", path, err)
	}
	switch head.Schema {
	case PlanSchema:
		var p Plan
		err := json.Unmarshal(b, &p)
		return p, err
	case Schema:
		r, err := ReadReport(path)
		if err != nil {
			return Plan{}, err
		}
		if r.Plan == nil {
			return Plan{}, fmt.Errorf("%s: the tune advised no change (%s), so there is no plan to apply", path, adviceOf(r))
		}
		return *r.Plan, nil
	}
	return Plan{}, fmt.Errorf("%s: schema %q: want a pipetop tune report (%s) or a plan (%s)", path, head.Schema, Schema, PlanSchema)
}

// adviceOf says in a few words why a tune advised no change.
func adviceOf(r Report) string {
	switch {
	case r.Tuned == "":
		return r.Reason
	case r.Unconfirmed != nil:
		return "its best find, " + r.Unconfirmed.Setting.String() + ", is unconfirmed: " + r.Unconfirmed.Confirm
	case r.Winner != nil && r.Winner.Baseline:
		return "the script's own settings were the best measured"
	}
	return r.noWinner()
}

// noWinner says why a tune that searched has no winner: no trial beat
// the script's own settings (and the memory guard refused the settings
// beyond them), or none was measured in full runs.
func (r Report) noWinner() string {
	var base *Trial
	var refused []string
	for i, tr := range r.Trials {
		switch {
		case tr.Status == verdict.PhaseRefused:
			refused = append(refused, tr.Setting.String())
		case tr.Setting == r.Baseline && tr.SamplesPerSec > 0 && base == nil:
			base = &r.Trials[i]
		}
	}
	if base == nil || len(r.Candidates) > 0 {
		return "no setting was measured in full runs"
	}
	for _, tr := range r.Trials {
		if !tr.Confirm && tr.Setting != r.Baseline && tr.Phase == base.Phase && tr.SamplesPerSec > base.SamplesPerSec {
			return "no setting was confirmed in full runs (" + tr.Setting.String() + " beat the script's own in the search)"
		}
	}
	why := "keep the script's settings: no setting tried beat them in the search"
	if len(refused) > 0 {
		why += fmt.Sprintf(", and the memory guard stopped %d before they filled the memory allowed (%s)", len(refused), strings.Join(refused, "; "))
	}
	return why
}

// ReadFrom reads the file pipetop tune --from names: a pipetop bisect
// report, or a tune report — its bisect, and its search trials, which the
// search then does not run again.
func ReadFrom(path string) (bisect.Report, []Trial, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return bisect.Report{}, nil, err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return bisect.Report{}, nil, fmt.Errorf("%s: not JSON: %w", path, err)
	}
	if head.Schema != Schema {
		r, err := bisect.DecodeReport(b)
		if err != nil {
			return bisect.Report{}, nil, fmt.Errorf("%s: %w (or a pipetop tune report, %s)", path, err, Schema)
		}
		return r, nil, nil
	}
	r, err := ReadReport(path)
	if err != nil {
		return bisect.Report{}, nil, err
	}
	var search []Trial
	for _, tr := range r.Trials {
		if !tr.Confirm {
			search = append(search, tr)
		}
	}
	return r.Bisect, search, nil
}
