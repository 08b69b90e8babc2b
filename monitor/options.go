package monitor

import (
	"os"
	"time"

	"github.com/pipetop/pipetop/monitor/source"
)

// AggregatesEnv overrides whether a viewer asks trainers for agg frames
// instead of steps: 1 always, 0 never.
const AggregatesEnv = "PIPETOP_AGGREGATES"

// aggregates is whether to ask for agg frames: AggregatesEnv's answer,
// else fallback.
func aggregates(fallback bool) bool {
	switch os.Getenv(AggregatesEnv) {
	case "1":
		return true
	case "0":
		return false
	}
	return fallback
}

// ScreenOptions are a full screen's, refreshed every interval, sampling
// sources: one aggregate a second from each trainer (unless
// PIPETOP_AGGREGATES=0), its frames held for a refresh (at most a second:
// a fast trainer wakes the viewer once a redraw, and a redraw shows steps
// at most two refreshes old) and read once a refresh, the trainer's recent
// minute at once, and every rank but the shown one in brief.
func ScreenOptions(sources []source.Source, interval time.Duration) Options {
	return Options{Sources: sources, Batch: min(max(interval, 0), time.Second), Gated: true,
		Aggregates: aggregates(true), Backfill: true, BriefRanks: true}
}

// OnceOptions are a one-shot snapshot's (--once, --json), sampling
// sources: steps (unless PIPETOP_AGGREGATES=1), the trainer's recent
// minute at once, and no waiting for a trainer to appear.
func OnceOptions(sources []source.Source) Options {
	return Options{Sources: sources, NoWatch: true, Aggregates: aggregates(false), Backfill: true}
}
