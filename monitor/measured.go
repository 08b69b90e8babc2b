package monitor

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/tunefile"
)

// measuredEvery is how often the trainer's directory is looked at again.
const measuredEvery = 10 * time.Second

// measuredLookup remembers the last look for one trainer.
type measuredLookup struct {
	pid int
	at  time.Time
	m   *verdict.Measured
}

// measured is pipetop tune's advice for the shown trainer's script, from
// the tune report (tunefile.Name) in its working directory; nil when there is none, or it tuned
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
	l.m = tunefile.Measured(filepath.Join(cwd, tunefile.Name), tunefile.ScriptOf(v.Trainer.Config))
	return l.m
}
