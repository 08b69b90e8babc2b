package monitor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/feed"
)

// TuneFile is the report pipetop tune writes by default; a trainer whose
// working directory holds one of its own script gets that measured advice
// in its input-bound verdict instead of the rule's guess.
const TuneFile = "tune.json"

// tuneSchema tags a tune report (monitor/tune.Schema).
const tuneSchema = "pipetop-tune/1"

// measuredEvery is how often the trainer's directory is looked at again.
const measuredEvery = 10 * time.Second

// measuredLookup remembers the last look for one trainer.
type measuredLookup struct {
	pid int
	at  time.Time
	m   *verdict.Measured
}

// measured is pipetop tune's advice for the shown trainer's script, from
// TuneFile in its working directory; nil when there is none, or it tuned
// another script.
func (c *Snapshotter) measured(v *feed.View, now time.Time) *verdict.Measured {
	if v.Trainer == nil || v.WatchPID <= 0 {
		return nil
	}
	l := &c.tuned
	if l.pid == v.WatchPID && now.Sub(l.at) < measuredEvery {
		return l.m
	}
	l.pid, l.at, l.m = v.WatchPID, now, nil
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", v.WatchPID))
	if err != nil {
		return nil
	}
	l.m = readMeasured(filepath.Join(cwd, TuneFile), scriptOf(v.Trainer.Config))
	return l.m
}

// readMeasured is the advice of the tune report at path when it tuned
// script (its base name); nil otherwise.
func readMeasured(path, script string) *verdict.Measured {
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
	if json.Unmarshal(b, &r) != nil || r.Schema != tuneSchema || r.Tuned != "loader" || scriptOf(argvConfig(r.Command)) != script {
		return nil
	}
	if len(r.Unconfirmed) > 0 && string(r.Unconfirmed) != "null" {
		return nil // its best find is unconfirmed: nothing measured to cite
	}
	return &verdict.Measured{Advice: r.Advice, SpeedUp: r.SpeedUp, File: path}
}

// argvConfig is a trainer config holding argv, as the Python
// instrumentation's hello does.
func argvConfig(argv []string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"argv": argv})
	return b
}

// scriptOf is the base name of the first .py argument of the argv a
// trainer's config carries, "" when there is none.
func scriptOf(config json.RawMessage) string {
	var c struct {
		Argv []string `json:"argv"`
	}
	if json.Unmarshal(config, &c) != nil {
		return ""
	}
	for _, a := range c.Argv {
		if strings.HasSuffix(a, ".py") {
			return filepath.Base(a)
		}
	}
	return ""
}
