package export

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pipetop/pipetop/export/scrapetest"
	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// stepsFrom are n steps of 10 ms from step first on, ending by t.
func stepsFrom(first, n int64, t time.Time) *ipc.Frame {
	fr := &ipc.Frame{Type: ipc.TypeSteps}
	for i := range n {
		end := t.Add(time.Duration(i-n) * 10 * time.Millisecond).UnixNano()
		fr.Steps = append(fr.Steps, stage.RecordOf(first+i, end-10e6, end, 8, []int64{7e6, 1e6, 1e6, 1e6}, nil))
	}
	return fr
}

// A sample judges as a refresh of the monitor does (one Judge call, for
// the run and each rank's own verdict), and a scrape judges
// nothing: it reads the latest snapshot, its counters brought up to the
// scrape (new steps show without a new sample).
func TestScrapeJudgesNothing(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	for _, ranks := range []int{0, 3} {
		c := monitor.NewSnapshotter(feed.New(0))
		apply := func(r int, m ipc.Message) { c.Feed.Apply(m, t0) }
		if ranks > 0 {
			g := monitor.NewReplay()
			c.Group, apply = g, func(r int, m ipc.Message) { g.Apply(r, m, t0) }
		}
		for r := range max(1, ranks) {
			h := &ipc.Hello{Name: "judged", PID: 100 + r, StartNs: t0.Add(-time.Minute).UnixNano(), Stages: testStages}
			if ranks > 0 {
				rank := r
				h.Rank, h.WorldSize, h.Run = &rank, ranks, "run"
			}
			apply(r, ipc.Message{Connected: h})
			apply(r, ipc.Message{Frame: stepsFrom(0, 100, t0)})
		}
		calls := 0
		c.Judge = func(r verdict.Run) verdict.Judgement {
			calls++
			return verdict.JudgeRun(r)
		}
		e := New(c, Options{Interval: time.Hour, Window: snapshot.Window{Label: "5s", Seconds: 5}})
		e.Sample(t0)
		if calls != 1 {
			t.Errorf("%d ranks: a sample made %d Judge calls, want 1", ranks, calls)
		}
		srv := httptest.NewServer(e.Handler())
		id := L{"trainer": "judged"}
		if ranks > 0 {
			id["rank"] = "0"
		}
		for i, want := range []float64{100, 150} {
			mfs, err := scrapetest.Fetch(srv.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := mfs.Value("pipetop_trainer_steps_total", id); v != want {
				t.Errorf("%d ranks, scrape %d: %v steps, want %v", ranks, i, v, want)
			}
			if !mfs.Has("pipetop_verdict", id) {
				t.Errorf("%d ranks, scrape %d: no verdict", ranks, i)
			}
			apply(0, ipc.Message{Frame: stepsFrom(100, 50, t0)})
		}
		srv.Close()
		if calls != 1 {
			t.Errorf("%d ranks: %d Judge calls after the scrapes, want the sample's 1", ranks, calls)
		}
	}
}
