package remote

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"

	"github.com/pipetop/pipetop/monitor/judge"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// QueryTimeout bounds the queries of one refresh together.
const QueryTimeout = 5 * time.Second

// minScrapes is how many scrapes a rate's range covers at least: a
// window shorter than that (5s at a 15 s scrape interval) is widened.
const minScrapes = 4

// Unavailable is what a remote view cannot show, as the snapshot's
// remote.unavailable says it.
var Unavailable = []string{
	"process table (the exporter serves no processes)",
	"loader statistics",
	"stack samples (hot code)",
	"per-stage p50/p99 (stage times are counters: means and shares only)",
	"progress frames (the stage a rank is in now)",
}

// View is one run read from a Prometheus server: every rank's window
// summary, and the trainer, link and host readings of the chosen rank.
// It is safe for concurrent use.
type View struct {
	c   *Client
	run string
	ctx context.Context

	rank atomic.Int64 // the chosen rank; -1: the lowest

	mu       sync.Mutex            // one Fill at a time
	seen     map[int]snapshot.Rank // every rank seen, kept when it vanishes
	interval float64               // the scrape interval, seconds; 0 until known
}

// Open asks the server for the run (the only run it has when run is ""),
// so that an unreachable server, a response that is not Prometheus' and a
// run it does not know are errors before anything is shown. rank chooses
// whose trainer, flame bar and host the view shows; -1 the lowest rank.
func Open(ctx context.Context, c *Client, run string, rank int) (*View, error) {
	runs, err := Runs(ctx, c, time.Now())
	if err != nil {
		return nil, err
	}
	switch {
	case run == "" && len(runs) == 1:
		run = runs[0]
	case run == "" && len(runs) == 0:
		return nil, fmt.Errorf("prometheus %s has no pipetop run (no pipetop_trainer_info series with a run label): does it scrape pipetop export on the ranks' hosts?", c.URL())
	case run == "":
		return nil, fmt.Errorf("prometheus %s has %d runs: name one (%s)", c.URL(), len(runs), strings.Join(runs, ", "))
	default:
		found := false
		for _, r := range runs {
			found = found || r == run
		}
		if !found {
			return nil, fmt.Errorf("prometheus %s has no run %q (it has: %s)", c.URL(), run, cmpOr(strings.Join(runs, ", "), "none"))
		}
	}
	v := &View{c: c, run: run, ctx: ctx, seen: map[int]snapshot.Rank{}}
	v.rank.Store(int64(rank))
	return v, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Runs lists the runs whose ranks the server has a pipetop_trainer_info
// series of at t, sorted.
func Runs(ctx context.Context, c *Client, t time.Time) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	vec, err := c.Query(ctx, `count by (run) (pipetop_trainer_info{run!=""})`, t)
	if err != nil {
		return nil, err
	}
	var runs []string
	for _, s := range vec {
		if r := s.Labels["run"]; r != "" {
			runs = append(runs, r)
		}
	}
	sort.Strings(runs)
	return runs, nil
}

// Run is the run the view reads.
func (v *View) Run() string { return v.run }

// URL is the server's address.
func (v *View) URL() string { return v.c.URL() }

// SetRank chooses the rank whose trainer, flame bar and host are shown
// from the next Fill on; -1 the lowest. It does not wait for a Fill.
func (v *View) SetRank(r int) { v.rank.Store(int64(r)) }

// Fill sets the trainer parts of s (link, trainer, summary, ranks) and its
// CPU and GPU parts, from the host of the chosen rank, from the server at
// s.Time over s.Window. It returns the window summaries of the connected
// ranks with steps and the chosen rank's step count. A failed query leaves
// s's link failed, saying why.
func (v *View) Fill(s *snapshot.Snapshot) monitor.RemoteReading {
	ctx, cancel := context.WithTimeout(v.ctx, QueryTimeout)
	defer cancel()
	v.mu.Lock()
	defer v.mu.Unlock()
	s.Remote = &snapshot.Remote{URL: v.c.URL(), Run: v.run, Unavailable: Unavailable}
	s.GPU = snapshot.GPU{Status: "no readings yet from the chosen rank's host", Devices: []snapshot.Device{}}
	rs, err := v.read(ctx, s.Time, s.Window)
	if err != nil {
		s.Link = snapshot.Link{State: snapshot.LinkFailed, Detail: err.Error(), Socket: v.c.URL()}
		return monitor.RemoteReading{}
	}
	chosen := v.fillRanks(s, rs)
	if chosen == nil {
		s.Link = snapshot.Link{State: snapshot.LinkNone, Detail: fmt.Sprintf("no rank of run %s at prometheus %s", v.run, v.c.URL()), Socket: v.c.URL()}
		return monitor.RemoteReading{}
	}
	v.fillChosen(s, chosen)
	if err := v.readHost(ctx, s, chosen); err != nil {
		s.GPU.Status = "host readings: " + err.Error()
	}
	rd := monitor.RemoteReading{Shown: chosen.window(s.Time), Judged: true, Steps: int64(chosen.stepsTotal), Own: own(s, rs)}
	for _, r := range rs {
		if r.connected && r.summary != nil {
			pid, _ := strconv.Atoi(r.pid)
			rd.Ranks = append(rd.Ranks, verdict.RankSummary{Rank: r.rank, PID: pid, Host: cmpOr(r.host, r.instance), Summary: *r.summary})
		}
	}
	return rd
}

// fillRanks sets s.Ranks: the ranks read now and, as disconnected, those
// seen before that the server no longer has. It returns the chosen rank's
// data (the lowest rank's when the chosen one is not there), nil when
// there is none.
func (v *View) fillRanks(s *snapshot.Snapshot, rs []*rankData) *rankData {
	now := map[int]bool{}
	var chosen *rankData
	want := int(v.rank.Load())
	for _, r := range rs {
		now[r.rank] = true
		v.seen[r.rank] = r.snapshotRank()
		if chosen == nil || r.rank == want {
			chosen = r
		}
	}
	for rank, old := range v.seen {
		if !now[rank] {
			old.Link, old.Summary = snapshot.LinkDisconnected, nil
			v.seen[rank] = old
		}
	}
	s.Ranks = make([]snapshot.Rank, 0, len(v.seen))
	for _, r := range v.seen {
		s.Ranks = append(s.Ranks, r)
	}
	sort.Slice(s.Ranks, func(i, j int) bool { return s.Ranks[i].Rank < s.Ranks[j].Rank })
	return chosen
}

// own are the windows of each of s's ranks judged on its own, by index in
// s.Ranks: those read now with steps in the range or connected.
func own(s *snapshot.Snapshot, rs []*rankData) []*judge.Window {
	byRank := map[int]*rankData{}
	for _, r := range rs {
		byRank[r.rank] = r
	}
	out := make([]*judge.Window, len(s.Ranks))
	for i := range s.Ranks {
		if r, ok := byRank[s.Ranks[i].Rank]; ok && (r.summary != nil || r.connected) {
			w := r.window(s.Time)
			out[i] = &w
		}
	}
	return out
}

// fillChosen sets the top-level trainer parts of s from rank r.
func (v *View) fillChosen(s *snapshot.Snapshot, r *rankData) {
	s.Link = snapshot.Link{State: snapshot.LinkDisconnected, Socket: v.c.URL(),
		Detail: fmt.Sprintf("rank %d: pipetop export at %s says the trainer is gone", r.rank, r.instance)}
	if r.connected {
		s.Link.State, s.Link.Detail = snapshot.LinkConnected, ""
	}
	s.Trainer, s.Summary = r.trainer(s.Time), r.summary
	s.Trainer.Run, s.Trainer.Socket = v.run, v.c.URL()
	s.Remote.Rank, s.Remote.Host, s.Remote.Instance, s.Remote.RangeSec = r.rank, r.host, r.instance, r.rangeSec
}

// rangeFor is the range, in whole seconds, rates are taken over for
// window w: the window, at least minScrapes scrape intervals; for "all",
// since the earliest start.
func (v *View) rangeFor(w snapshot.Window, now time.Time, earliest float64) int {
	sec := w.Seconds
	if sec <= 0 && earliest > 0 {
		sec = float64(now.UnixMilli())/1e3 - earliest
	}
	if sec <= 0 {
		sec = 3600
	}
	interval := v.interval
	if interval <= 0 {
		interval = 15
	}
	return int(math.Ceil(max(sec, minScrapes*interval)))
}

// quote is a PromQL string literal of s.
func quote(s string) string { return strconv.Quote(s) }
