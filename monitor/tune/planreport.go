package tune

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PlanReportSchema tags what one process of a script reports of the plan
// it applied (PIPETOP_PLAN_OUT, docs/python.md "Plans").
const PlanReportSchema = "pipetop-plan-report/1"

// PlanReport is what one process applied of a plan: the DataLoader calls
// it reached and its notes (refusals, a site no DataLoader was made at).
type PlanReport struct {
	Schema  string          `json:"schema"`
	PID     int             `json:"pid"`
	Plan    string          `json:"plan"`
	Applied []AppliedLoader `json:"applied"`
	Notes   []string        `json:"notes"`
}

// AppliedLoader is one DataLoader call the plan reached: its site, the
// arguments it was made with, and how many loaders were made there.
type AppliedLoader struct {
	Site    string         `json:"site"`
	Args    map[string]any `json:"args"`
	Loaders int            `json:"loaders"`
}

// ReadPlanReports reads the reports the script's processes wrote to dir
// (plan-PID.json each), in file-name order; a file that is not a report is
// an error naming it.
func ReadPlanReports(dir string) ([]PlanReport, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "plan-*.json"))
	if err != nil {
		return nil, err
	}
	var out []PlanReport
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return out, fmt.Errorf("plan report: %w", err)
		}
		var r PlanReport
		if err := json.Unmarshal(b, &r); err != nil || r.Schema != PlanReportSchema {
			return out, fmt.Errorf("plan report %s: not a %s file (%v)", path, PlanReportSchema, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// PlanOutcome folds the reports of a run: whether the plan reached a
// DataLoader in any process, where, and every note once, in order.
func PlanOutcome(reports []PlanReport) (sites, notes []string) {
	for _, r := range reports {
		for _, a := range r.Applied {
			if !slices.Contains(sites, a.Site) {
				sites = append(sites, a.Site)
			}
		}
		for _, n := range r.Notes {
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
	}
	return sites, notes
}

// DescribeOutcome is a run's plan outcome in one line for the terminal.
func DescribeOutcome(reports []PlanReport, err error) string {
	if err != nil {
		return "the plan's outcome is unknown: " + err.Error()
	}
	sites, notes := PlanOutcome(reports)
	line := "the plan reached no DataLoader"
	if len(sites) > 0 {
		line = "the plan was applied at " + strings.Join(sites, ", ")
	}
	if len(notes) > 0 {
		line += "; " + strings.Join(notes, "; ")
	}
	return line
}
