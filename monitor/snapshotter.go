package monitor

import (
	"math"
	"os"
	"sync"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/ring"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// HistoryLen is how many refreshes the sparklines remember.
const HistoryLen = 240

// GateWait is how long a snapshot waits for the gated trainers' frames to
// be read and applied; a slower read shows at the next refresh.
const GateWait = 100 * time.Millisecond

// Snapshotter builds one snapshot per refresh: the feed's trainer summary and
// verdict, every registered source's reading, and the short histories
// behind the sparklines. Snapshot may be called from any goroutine; one
// call at a time is enforced.
type Snapshotter struct {
	Feed *feed.Feed
	// Group, when set, replaces Feed: the snapshot shows every rank of a
	// run, its trainer parts being the lowest rank's.
	Group *Group
	// Remote, when set, replaces Feed and Group: the trainer and host parts
	// come from elsewhere (a Prometheus server, package remote), and
	// Sources are not sampled: they would read this machine.
	Remote  Remote
	Sources []source.Source
	// Gate, when set, is opened at the start of each snapshot so that the
	// trainers' frames are read in the same wake-up (ipc.Gate).
	Gate *ipc.Gate
	// BriefRanks gives every rank of a Group but the lowest its link, pid
	// and summary only (feed.Brief), a summary without the stages'
	// quantiles and wait pattern: no verdict of its own, trainer, loader
	// or totals. The screen shows nothing else of them; the JSON snapshot
	// and the exporter want it all.
	BriefRanks bool

	mu        sync.Mutex
	lastSteps int64
	lastTime  time.Time
	rate      *ring.Ring
	busy      *ring.Ring
	load      *ring.Ring
	buf       []float64
	host      string
	mem       memHistory
}

// Remote fills a snapshot's trainer parts (link, trainer, summary, ranks)
// and whatever host parts it reads from somewhere other than this
// machine's sockets, and says what the snapshot's verdict is judged on.
type Remote interface {
	Fill(s *snapshot.Snapshot) RemoteReading
}

// RemoteReading is what a Remote read besides the snapshot's parts.
type RemoteReading struct {
	// Inputs are the shown rank's verdict inputs; Judged is false when no
	// rank was read (no verdict then).
	Inputs verdict.Inputs
	Judged bool
	// Ranks are the window summaries of the connected ranks, for the
	// straggler rule.
	Ranks []verdict.RankSummary
	// Steps is the shown trainer's step count (the steps/s history).
	Steps int64
}

// NewSnapshotter returns a Snapshotter over the feed and the sources, sampled
// in the order given.
func NewSnapshotter(f *feed.Feed, sources ...source.Source) *Snapshotter {
	return &Snapshotter{Feed: f, Sources: sources,
		rate: ring.New(HistoryLen), busy: ring.New(HistoryLen), load: ring.New(HistoryLen)}
}

// Snapshot samples every source at now and returns the snapshot for the
// window w. Sampling errors are not returned: they show in the snapshot as
// status lines, failed readings and the sampler statistics.
func (c *Snapshotter) Snapshot(now time.Time, w snapshot.Window) snapshot.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Gate != nil {
		c.Gate.Open(GateWait)
	}
	s := snapshot.Snapshot{Version: snapshot.SchemaVersion, Time: now, Window: w,
		GPU: snapshot.GPU{Status: "GPU monitoring off", Devices: []snapshot.Device{}}, GPUProcesses: []snapshot.GPUProcess{}}
	if c.Remote != nil {
		c.remote(&s)
		return s
	}
	primary, ranks := c.fillTrainer(&s)
	t := source.Target{PID: primary.TrainerPID(), TrainingTID: primary.TrainingTID()}
	s.Samplers = make([]snapshot.SamplerStat, len(c.Sources))
	for i, src := range c.Sources {
		start := time.Now()
		err := src.Sample(now, t)
		s.Samplers[i] = snapshot.SamplerStat{Name: src.Name(), Seconds: time.Since(start).Seconds(), OK: err == nil}
		src.Fill(&s)
	}
	host := c.mem.host(&s, t.PID)
	if in, ok := primary.Inputs(&s, host); ok {
		in.Ranks = ranks
		v := verdict.Judge(in)
		s.Verdict = &v
	}
	c.record(&s, primary.Steps())
	return s
}

// remote builds s from c.Remote and judges it as a local run of ranks is
// judged: the shown rank's inputs with every rank's summary.
func (c *Snapshotter) remote(s *snapshot.Snapshot) {
	rd := c.Remote.Fill(s)
	if rd.Judged {
		in := rd.Inputs
		in.Ranks = rd.Ranks
		v := verdict.Judge(in)
		s.Verdict = &v
	}
	c.record(s, rd.Steps)
}

// fillTrainer sets the trainer parts of s from the feed, or from every
// rank of the group (each rank judged on its own, or in brief: BriefRanks),
// and returns the feed
// they come from and the window summaries of the connected ranks.
func (c *Snapshotter) fillTrainer(s *snapshot.Snapshot) (*feed.Feed, []verdict.RankSummary) {
	if c.Group == nil {
		c.Feed.Fill(s)
		return c.Feed, nil
	}
	feeds := c.Group.Feeds()
	if len(feeds) == 0 {
		c.Feed.Fill(s)
		s.Link.Detail = "looking for the ranks of run " + c.Group.Run()
		return c.Feed, nil
	}
	if c.host == "" {
		c.host, _ = os.Hostname()
	}
	s.Ranks = make([]snapshot.Rank, len(feeds))
	var sums []verdict.RankSummary
	for i, rf := range feeds {
		var b feed.Brief
		if i == 0 || !c.BriefRanks {
			s.Ranks[i], b = c.fullRank(s, rf, i == 0)
		} else {
			b = rf.Feed.Brief(s.Time, s.Window)
			s.Ranks[i] = snapshot.Rank{Rank: rf.Rank, Host: c.host, Link: b.Link.State, PID: b.PID, Summary: b.Summary}
		}
		if sum, ok := rankSummary(&s.Ranks[i], b); ok {
			sums = append(sums, sum)
		}
	}
	return feeds[0].Feed, append(sums, missingRanks(feeds, c.Group.WorldSize())...)
}

// fullRank is every part of the rank rf, judged on its own, and its
// brief; shown sets the trainer parts of s from it.
func (c *Snapshotter) fullRank(s *snapshot.Snapshot, rf RankFeed, shown bool) (snapshot.Rank, feed.Brief) {
	rs := snapshot.Snapshot{Time: s.Time, Window: s.Window}
	rf.Feed.Fill(&rs)
	if in, ok := rf.Feed.Inputs(&rs, nil); ok {
		v := verdict.Judge(in)
		rs.Verdict = &v
	}
	if shown {
		s.Link, s.Trainer, s.Summary, s.Verdict, s.Loader, s.Totals = rs.Link, rs.Trainer, rs.Summary, rs.Verdict, rs.Loader, rs.Totals
		s.Code = rs.Code
	}
	r := snapshot.Rank{Rank: rf.Rank, Host: c.host, Link: rs.Link.State, Summary: rs.Summary, Verdict: rs.Verdict,
		Trainer: rs.Trainer, Loader: rs.Loader, Totals: rs.Totals}
	if rs.Trainer != nil {
		r.PID = rs.Trainer.PID
	}
	return r, feed.Brief{Link: rs.Link, PID: r.PID, Summary: rs.Summary, Progress: rs.Progress, Heard: rf.Feed.Heard()}
}

// rankSummary is what the run's rules read of one rank: its window, where
// it runs, its latest progress and when it was last heard from; ok is
// false for a rank never connected.
func rankSummary(r *snapshot.Rank, b feed.Brief) (verdict.RankSummary, bool) {
	sum := verdict.RankSummary{Rank: r.Rank, PID: r.PID, Host: r.Host, Progress: b.Progress}
	switch r.Link {
	case snapshot.LinkConnected:
		if !b.Heard.IsZero() {
			sum.HeardNs = b.Heard.UnixNano()
		}
	case snapshot.LinkDisconnected:
		sum.Gone = true
	default:
		return sum, false
	}
	if r.Summary != nil {
		sum.Summary = *r.Summary
	}
	return sum, true
}

// missingRanks are the ranks below world that have no feed: they never
// answered a hello.
func missingRanks(feeds []RankFeed, world int) []verdict.RankSummary {
	have := map[int]bool{}
	for _, rf := range feeds {
		have[rf.Rank] = true
	}
	var out []verdict.RankSummary
	for r := 0; r < world; r++ {
		if !have[r] {
			out = append(out, verdict.RankSummary{Rank: r, Missing: true})
		}
	}
	return out
}

// SourceNames names the sources, in sampling order.
func (c *Snapshotter) SourceNames() []string {
	names := make([]string, len(c.Sources))
	for i, src := range c.Sources {
		names[i] = src.Name()
	}
	return names
}

// parts are the sources' parts of the snapshot.
func (c *Snapshotter) parts() []source.Part {
	ps := make([]source.Part, len(c.Sources))
	for i, src := range c.Sources {
		ps[i] = src
	}
	return ps
}

// Close closes every source.
func (c *Snapshotter) Close() {
	for _, src := range c.Sources {
		src.Close()
	}
}

// record pushes this refresh into the histories and copies them into s;
// steps is the shown trainer's step count.
func (c *Snapshotter) record(s *snapshot.Snapshot, steps int64) {
	rate := math.NaN()
	if !c.lastTime.IsZero() && s.Time.After(c.lastTime) && s.Link.State == snapshot.LinkConnected {
		rate = float64(steps-c.lastSteps) / s.Time.Sub(c.lastTime).Seconds()
	}
	c.lastSteps, c.lastTime = steps, s.Time
	c.rate.Push(rate)
	c.busy.Push(gpuBusy(s))
	c.load.Push(s.CPU.Total.Or(math.NaN()))
	s.History.StepsPerSec = c.values(c.rate)
	s.History.GPUBusy = c.values(c.busy)
	s.History.CPU = c.values(c.load)
}

func (c *Snapshotter) values(r *ring.Ring) []float64 {
	c.buf = r.Values(c.buf)
	return append([]float64(nil), c.buf...)
}

// gpuBusy is the trainer's own GPU busy share when it publishes GPU times,
// else the highest device activity (GPM SM activity, else kernel-active).
func gpuBusy(s *snapshot.Snapshot) float64 {
	if s.Summary != nil && s.Summary.HasGPU && s.Link.State == snapshot.LinkConnected {
		return 100 * s.Summary.GPUBusy
	}
	best := math.NaN()
	for _, d := range s.GPU.Devices {
		v := d.SMActivity
		if !v.OK() {
			v = d.KernelActive
		}
		if v.OK() && (math.IsNaN(best) || *v.Value > best) {
			best = *v.Value
		}
	}
	return best
}
