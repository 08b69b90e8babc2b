// Package tunefile is the pipetop-tune/1 report as a viewer reads it: its
// schema and default name, and the measured advice that a live verdict of
// the tuned script cites (verdict.Measured). pipetop tune writes the report
// (monitor/tune owns its other fields); the monitor reads it from the
// trainer's working directory without importing monitor/tune.
package tunefile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipetop/pipetop/metrics/verdict"
)

// Schema tags a tune report (pipetop tune --json, docs/tune.md).
const Schema = "pipetop-tune/1"

// Name is the report pipetop tune writes by default; a trainer whose
// working directory holds one of its own script gets that measured advice
// in its input-bound verdict instead of the rule's guess.
const Name = "tune.json"

// TunedLoader is the report's tuned field when it tried the training
// DataLoader's settings: the only tune whose advice an input-bound verdict
// cites.
const TunedLoader = "loader"

// Measured is the advice of the tune report at path when it tuned script
// (a base name, ScriptOf); nil otherwise: no file, not a tune report,
// another script's, one that tuned no DataLoader, or one whose best find
// the budget left unconfirmed.
func Measured(path, script string) *verdict.Measured {
	b, err := os.ReadFile(path)
	if err != nil || script == "" {
		return nil
	}
	var r struct {
		Schema      string          `json:"schema"`
		Command     []string        `json:"command"`
		Advice      string          `json:"advice"`
		SpeedUp     float64         `json:"speed_up"`
		Tuned       string          `json:"tuned"`
		Unconfirmed json.RawMessage `json:"unconfirmed"`
	}
	if json.Unmarshal(b, &r) != nil || r.Schema != Schema || r.Tuned != TunedLoader || scriptIn(r.Command) != script {
		return nil
	}
	if len(r.Unconfirmed) > 0 && string(r.Unconfirmed) != "null" {
		return nil // its best find is unconfirmed: nothing measured to cite
	}
	return &verdict.Measured{Advice: r.Advice, SpeedUp: r.SpeedUp, File: path}
}

// ScriptOf is the base name of the first .py argument of the argv a
// trainer's config carries (the Python instrumentation's hello), "" when
// there is none.
func ScriptOf(config json.RawMessage) string {
	var c struct {
		Argv []string `json:"argv"`
	}
	if json.Unmarshal(config, &c) != nil {
		return ""
	}
	return scriptIn(c.Argv)
}

// scriptIn is the base name of the first .py argument of argv.
func scriptIn(argv []string) string {
	for _, a := range argv {
		if strings.HasSuffix(a, ".py") {
			return filepath.Base(a)
		}
	}
	return ""
}
