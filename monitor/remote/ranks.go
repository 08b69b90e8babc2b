package remote

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// rankData is what the server says about one rank of the run.
type rankData struct {
	rank                       int
	key                        string // seriesKey of its series
	trainerName, host, pid     string
	instance, job              string
	world                      int
	connected                  bool
	stepsTotal                 float64
	start, lastStep, lastEnd   float64 // Unix seconds; 0 when absent
	loss                       float64
	hasLoss                    bool
	scraped                    time.Time // when its exporter was last scraped
	rangeSec                   float64
	steps, rate, samples, wall float64
	p50, p99                   float64
	stages                     map[string]*stageRate
	summary                    *stage.Summary
}

// stageRate is one stage's seconds per second of wall time.
type stageRate struct {
	cpu, gpu float64
	hasGPU   bool
}

// series names of the instant readings.
const gaugeNames = `pipetop_trainer_(info|connected|steps_total|last_step|last_step_time_seconds|start_time_seconds|loss)`

// read asks the server about every rank of the run at t over window w.
func (v *View) read(ctx context.Context, t time.Time, w snapshot.Window) ([]*rankData, error) {
	sel := "run=" + quote(v.run)
	first, err := queryAll(ctx, v.c, t, map[string]string{
		"gauges":  `{__name__=~"` + gaugeNames + `",` + sel + `}`,
		"scraped": `timestamp(pipetop_trainer_connected{` + sel + `})`,
		"count":   `count_over_time(pipetop_trainer_connected{` + sel + `}[1m])`,
		"count10": `count_over_time(pipetop_trainer_connected{` + sel + `}[10s])`,
	})
	if err != nil {
		return nil, err
	}
	ranks := v.ranksOf(first)
	if len(ranks) == 0 {
		return nil, nil
	}
	earliest := 0.0
	for _, r := range ranks {
		if r.start > 0 && (earliest == 0 || r.start < earliest) {
			earliest = r.start
		}
	}
	rng := fmt.Sprintf("[%ds]", v.rangeFor(w, t, earliest))
	rate := func(metric string) string { return "rate(" + metric + "{" + sel + "}" + rng + ")" }
	second, err := queryAll(ctx, v.c, t, map[string]string{
		"steps":   "increase(pipetop_trainer_steps_total{" + sel + "}" + rng + ")",
		"rate":    rate("pipetop_trainer_steps_total"),
		"samples": rate("pipetop_trainer_samples_total"),
		"stages":  rate("pipetop_trainer_stage_seconds_total"),
		"wall":    rate("pipetop_trainer_step_wall_seconds_sum") + " / " + rate("pipetop_trainer_step_wall_seconds_count"),
		"p50":     "histogram_quantile(0.5, " + rate("pipetop_trainer_step_wall_seconds_bucket") + ")",
		"p99":     "histogram_quantile(0.99, " + rate("pipetop_trainer_step_wall_seconds_bucket") + ")",
	})
	if err != nil {
		return nil, err
	}
	out := make([]*rankData, 0, len(ranks))
	for _, r := range ranks {
		r.rangeSec = float64(v.rangeFor(w, t, earliest))
		r.apply(second, byKey(ranks))
		r.summary = r.summarize()
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rank < out[j].rank })
	return out, nil
}

// queryAll runs the named queries at t at once; the first error wins.
func queryAll(ctx context.Context, c *Client, t time.Time, queries map[string]string) (map[string][]Sample, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[string][]Sample, len(queries))
	var firstErr error
	for name, q := range queries {
		wg.Go(func() {
			vec, err := c.Query(ctx, q, t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out[name] = vec
		})
	}
	wg.Wait()
	return out, firstErr
}

// seriesKey identifies one rank's series from one exporter.
func seriesKey(l map[string]string) string {
	return l["rank"] + "\x00" + l["instance"] + "\x00" + l["job"]
}

// byKey indexes ranks by seriesKey.
func byKey(ranks []*rankData) map[string]*rankData {
	m := make(map[string]*rankData, len(ranks))
	for _, r := range ranks {
		m[r.key] = r
	}
	return m
}

// ranksOf reads the ranks from the instant readings: one per rank label
// (the exporter that says it is connected, when two serve the same rank).
func (v *View) ranksOf(q map[string][]Sample) []*rankData {
	all := map[string]*rankData{}
	for _, s := range q["gauges"] {
		rank, err := strconv.Atoi(s.Labels["rank"])
		if err != nil || rank < 0 {
			continue // a single-process trainer or a bad label: not a rank of the run
		}
		k := seriesKey(s.Labels)
		r := all[k]
		if r == nil {
			r = &rankData{rank: rank, key: k, instance: s.Labels["instance"], job: s.Labels["job"], trainerName: s.Labels["trainer"]}
			all[k] = r
		}
		r.gauge(s)
	}
	for _, s := range q["scraped"] {
		if r := all[seriesKey(s.Labels)]; r != nil && !math.IsNaN(s.V) {
			r.scraped = time.UnixMilli(int64(s.V * 1e3)).UTC()
		}
	}
	v.interval = scrapeInterval(q["count"], q["count10"])
	best := map[int]*rankData{}
	for _, r := range all {
		if b := best[r.rank]; b == nil || (r.connected && !b.connected) || (r.connected == b.connected && r.instance < b.instance) {
			best[r.rank] = r
		}
	}
	out := make([]*rankData, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	return out
}

// scrapeInterval estimates the scrape interval from how many samples a
// series has over the last minute and the last 10 s (a series younger
// than a minute has fewer; the 10 s count is right after 10 s then): the
// shortest estimate, 0 when none.
func scrapeInterval(perMinute, per10s []Sample) float64 {
	best := 0.0
	for span, vec := range map[float64][]Sample{60: perMinute, 10: per10s} {
		for _, s := range vec {
			if s.V >= 2 && (best == 0 || span/s.V < best) {
				best = span / s.V
			}
		}
	}
	return best
}

// gauge applies one instant reading.
func (r *rankData) gauge(s Sample) {
	switch s.Labels["__name__"] {
	case "pipetop_trainer_info":
		r.host, r.pid = s.Labels["host"], s.Labels["pid"]
		r.world, _ = strconv.Atoi(s.Labels["world_size"])
	case "pipetop_trainer_connected":
		r.connected = s.V == 1
	case "pipetop_trainer_steps_total":
		r.stepsTotal = s.V
	case "pipetop_trainer_last_step":
		r.lastStep = s.V
	case "pipetop_trainer_last_step_time_seconds":
		r.lastEnd = s.V
	case "pipetop_trainer_start_time_seconds":
		r.start = s.V
	case "pipetop_trainer_loss":
		r.loss, r.hasLoss = s.V, true
	}
}

// apply takes this rank's values of the range queries (from its own
// exporter only: ranks maps seriesKey to the rank that owns it).
func (r *rankData) apply(q map[string][]Sample, ranks map[string]*rankData) {
	mine := func(s Sample) bool { return ranks[seriesKey(s.Labels)] == r && !math.IsNaN(s.V) && !math.IsInf(s.V, 0) }
	one := func(name string) float64 {
		for _, s := range q[name] {
			if mine(s) {
				return s.V
			}
		}
		return 0
	}
	r.steps, r.rate, r.samples, r.wall = one("steps"), one("rate"), one("samples"), one("wall")
	r.p50, r.p99 = one("p50"), one("p99")
	r.stages = map[string]*stageRate{}
	for _, s := range q["stages"] {
		name := s.Labels["stage"]
		if !mine(s) || name == "" {
			continue
		}
		st := r.stages[name]
		if st == nil {
			st = &stageRate{}
			r.stages[name] = st
		}
		switch s.Labels["clock"] {
		case "cpu":
			st.cpu = s.V
		case "gpu":
			st.gpu, st.hasGPU = s.V, true
		}
	}
}
