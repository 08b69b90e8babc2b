package monitor

import (
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/gpumetric"
	"github.com/pipetop/pipetop/metrics/ring"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/judge"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// HistoryLen is how many refreshes the sparklines remember.
const HistoryLen = 240

// GateWait is how long a snapshot waits for the gated trainers' frames to
// be read and applied; a slower read shows at the next refresh.
const GateWait = 100 * time.Millisecond

// Snapshotter builds one snapshot per refresh, one way: it takes each
// feed's view of its trainer (feed.View) once, samples every registered
// source, gathers the host readings from their parts, builds each rank's
// verdict inputs once, judges them (judge), and only then fills the
// snapshot's trainer parts; it keeps the short histories behind the
// sparklines and the memory-creep rule. Snapshot may be called from any
// goroutine; one call at a time is enforced.
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
	// and summary only (a brief feed.View), a summary without the stages'
	// quantiles and wait pattern: no verdict of its own, trainer, loader
	// or totals. The screen shows nothing else of them; the JSON snapshot
	// and the exporter want it all.
	BriefRanks bool
	// Judge judges a refresh, called once per Snapshot (verdict.JudgeRun
	// when nil); tests count its calls.
	Judge func(verdict.Run) verdict.Judgement

	mu        sync.Mutex
	subMu     sync.Mutex
	subs      map[int]func(*Refresh) // by subscription
	nextSub   int
	lastSteps int64
	lastTime  time.Time
	rate      *ring.Ring
	busy      *ring.Ring
	load      *ring.Ring
	buf       []float64
	host      string
	mem       memHistory
	views     []rankView // the ranks' views, kept for the next refresh's
	tuned     measuredLookup
}

// Remote fills a snapshot's trainer parts (link, trainer, summary, ranks)
// and whatever host parts it reads from somewhere other than this
// machine's sockets, and says what the snapshot's verdicts are judged on.
type Remote interface {
	Fill(s *snapshot.Snapshot) RemoteReading
}

// RemoteReading is what a Remote read besides the snapshot's parts: the
// windows of the verdicts, which the snapshotter judges as it judges a
// local run.
type RemoteReading struct {
	// Shown is the shown rank's window; Judged is false when no rank was
	// read (no verdict then).
	Shown  judge.Window
	Judged bool
	// Ranks are the window summaries of the connected ranks, for the
	// straggler rule.
	Ranks []verdict.RankSummary
	// Own are the windows of the snapshot's ranks judged on their own, by
	// index in its Ranks; nil for a rank without a verdict.
	Own []*judge.Window
	// Steps is the shown trainer's step count (the steps/s history).
	Steps int64
}

// Refresh is one refresh as the Snapshotter's subscribers see it
// (Subscribe): the snapshot it made and the feed of the trainer it shows.
type Refresh struct {
	// Snapshot is the refresh's snapshot; a host reading (SampleHost) has
	// only the sources' parts: no trainer parts and no verdict.
	Snapshot *snapshot.Snapshot
	// Judged is set for a full refresh (Snapshot), unset for a host
	// reading.
	Judged bool
	shown  *feed.Feed // the shown trainer's feed; nil for a remote view
}

// View is the shown trainer's view at the refresh's time over another
// window than the snapshot's (pipetop run's keeper finds the pauses over
// a longer one); ok is false for a host reading or a remote view.
func (r *Refresh) View(w snapshot.Window) (v feed.View, ok bool) {
	if !r.Judged || r.shown == nil {
		return feed.View{}, false
	}
	return r.shown.View(r.Snapshot.Time, w, false), true
}

// Subscribe makes fn see every refresh from now on, after its snapshot is
// made, on the goroutine that refreshed (one at a time); fn must not
// refresh. The screen, --once, the exporter or a keeper refresh the
// monitor; a recorder subscribes to save what they sampled. It returns
// the call that ends the subscription.
func (c *Snapshotter) Subscribe(fn func(*Refresh)) (cancel func()) {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	if c.subs == nil {
		c.subs = map[int]func(*Refresh){}
	}
	id := c.nextSub
	c.nextSub++
	c.subs[id] = fn
	return func() {
		c.subMu.Lock()
		delete(c.subs, id)
		c.subMu.Unlock()
	}
}

// publish hands r to every subscriber, in the order they subscribed.
func (c *Snapshotter) publish(r *Refresh) {
	c.subMu.Lock()
	ids := make([]int, 0, len(c.subs))
	for id := range c.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fns := make([]func(*Refresh), len(ids))
	for i, id := range ids {
		fns[i] = c.subs[id]
	}
	c.subMu.Unlock()
	for _, fn := range fns {
		fn(r)
	}
}

// SampleHost samples every source for the shown trainer, as Snapshot
// does, and hands the snapshot of their parts alone to the subscribers:
// no feed view, no verdict. It is the refresh of a monitor that only
// records (pipetop record, pipetrain --record, a bisect phase's recording
// with no screen); a remote view samples nothing.
func (c *Snapshotter) SampleHost(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Remote != nil {
		return
	}
	s := emptySnapshot(now, snapshot.Window{})
	c.sample(&s, now, c.watched())
	c.publish(&Refresh{Snapshot: &s, shown: c.shownFeed()})
}

// watched is the shown trainer's target without a view: the feed's, or
// the lowest rank's of a group.
func (c *Snapshotter) watched() source.Target {
	pid, tid := c.shownFeed().Watched()
	return source.Target{PID: pid, TrainingTID: tid}
}

// shownFeed is the feed of the trainer the snapshots show: the feed, or
// the lowest rank's of a group that has one.
func (c *Snapshotter) shownFeed() *feed.Feed {
	if c.Group != nil {
		if feeds := c.Group.Feeds(); len(feeds) > 0 {
			return feeds[0].Feed
		}
	}
	return c.Feed
}

// emptySnapshot is a snapshot at now over w before anything fills it.
func emptySnapshot(now time.Time, w snapshot.Window) snapshot.Snapshot {
	return snapshot.Snapshot{Version: snapshot.SchemaVersion, Time: now, Window: w,
		GPU: snapshot.GPU{Status: "GPU monitoring off", Devices: []snapshot.Device{}}, GPUProcesses: []snapshot.GPUProcess{}}
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
	s := emptySnapshot(now, w)
	if c.Remote != nil {
		c.remote(&s)
		c.publish(&Refresh{Snapshot: &s, Judged: true})
		return s
	}
	side := c.read(now, w)
	t := source.Target{PID: side.shown.WatchPID, TrainingTID: side.shown.TrainingTID}
	c.sample(&s, now, t)
	r := side.inputs(now.UnixNano(), c.hostReadings(&s, t.PID), c.measured(&side.shown, now))
	side.fill(&s, c.judge(r))
	c.record(&s, side.shown.Steps)
	c.publish(&Refresh{Snapshot: &s, Judged: true, shown: side.feed})
	return s
}

// sample samples every source for the target t and lets each fill its
// part of s.
func (c *Snapshotter) sample(s *snapshot.Snapshot, now time.Time, t source.Target) {
	s.Samplers = make([]snapshot.SamplerStat, len(c.Sources))
	for i, src := range c.Sources {
		start := time.Now()
		err := src.Sample(now, t)
		s.Samplers[i] = snapshot.SamplerStat{Name: src.Name(), Seconds: time.Since(start).Seconds(), OK: err == nil}
		src.Fill(s)
	}
}

// hostReadings are the verdict's host readings: each source's that has
// some (source.HostFiller), from its part of s, with the memory histories
// of the trainer pid.
func (c *Snapshotter) hostReadings(s *snapshot.Snapshot, pid int) *verdict.Host {
	h := &verdict.Host{}
	for _, src := range c.Sources {
		if hf, ok := src.(source.HostFiller); ok {
			hf.FillHost(s, h)
		}
	}
	c.mem.add(pid, h)
	return h
}

// judge judges the refresh once (Judge, else verdict.JudgeRun): the
// run's verdict and each rank's own.
func (c *Snapshotter) judge(r verdict.Run) verdict.Judgement {
	if c.Judge != nil {
		return c.Judge(r)
	}
	return verdict.JudgeRun(r)
}

// remote builds s from c.Remote and judges it as a local run of ranks is
// judged: the shown rank's inputs with every rank's summary, and each
// rank's own.
func (c *Snapshotter) remote(s *snapshot.Snapshot) {
	rd := c.Remote.Fill(s)
	var r verdict.Run
	if rd.Judged {
		w := rd.Shown
		w.Ranks = rd.Ranks
		in := judge.Inputs(w)
		r.Shown = &in
	}
	if rd.Own != nil {
		r.Own = make([]*verdict.Inputs, len(rd.Own))
		for i, w := range rd.Own {
			if w != nil {
				in := judge.Inputs(*w)
				r.Own[i] = &in
			}
		}
	}
	j := c.judge(r)
	s.Verdict = j.Shown
	for i, v := range j.Own {
		s.Ranks[i].Verdict = v
	}
	c.record(s, rd.Steps)
}

// trainerSide is what the feeds gave at one refresh: the shown trainer's
// view and, for a run, every rank's.
type trainerSide struct {
	shown  feed.View
	feed   *feed.Feed // whose view shown is
	run    bool       // a run of ranks: shown is ranks[0]'s view
	brief  bool       // ranks but the lowest in brief, not judged on their own
	ranks  []rankView // every rank with a feed, by rank
	absent []verdict.RankSummary
	detail string // replaces the link's detail when set
}

// rankView is one rank's view and where it runs.
type rankView struct {
	rank int
	host string
	view feed.View
}

// read takes the view of the feed, or of every rank of the group (in
// brief for all but the lowest with BriefRanks).
func (c *Snapshotter) read(now time.Time, w snapshot.Window) trainerSide {
	if c.Group == nil {
		return trainerSide{shown: c.Feed.View(now, w, false), feed: c.Feed}
	}
	feeds := c.Group.Feeds()
	if len(feeds) == 0 {
		return trainerSide{shown: c.Feed.View(now, w, false), feed: c.Feed, detail: "looking for the ranks of run " + c.Group.Run()}
	}
	if c.host == "" {
		c.host, _ = os.Hostname()
	}
	c.views = slices.Grow(c.views[:0], len(feeds))[:len(feeds)]
	side := trainerSide{run: true, brief: c.BriefRanks, ranks: c.views, absent: missingRanks(feeds, c.Group.WorldSize())}
	for i, rf := range feeds {
		side.ranks[i] = rankView{rank: rf.Rank, host: c.host, view: rf.Feed.View(now, w, i > 0 && c.BriefRanks)}
	}
	side.shown, side.feed = side.ranks[0].view, feeds[0].Feed
	return side
}

// inputs builds the verdict inputs once per rank, judged at nowNs
// (judge.Inputs): the run's (the shown trainer's with the host readings h,
// pipetop tune's measured advice and, for a run, every rank's summary;
// nil before a hello) and each rank's own (by index in ranks; nil for a
// rank before its hello, and for every rank but the lowest in brief).
func (t *trainerSide) inputs(nowNs int64, h *verdict.Host, measured *verdict.Measured) verdict.Run {
	var r verdict.Run
	shown, ok := t.shown.Window(nowNs)
	if ok {
		shown.Host, shown.Measured = h, measured
	}
	if !t.run {
		if ok {
			in := judge.Inputs(shown)
			r.Shown = &in
		}
		return r
	}
	sums := make([]verdict.RankSummary, 0, len(t.ranks)+len(t.absent))
	var ins []verdict.Inputs
	for i := range t.ranks {
		rv := &t.ranks[i]
		if sum, ok := rv.summary(); ok {
			sums = append(sums, sum)
		}
		if t.brief && i > 0 {
			continue
		}
		if w, ok := rv.view.Window(nowNs); ok {
			if r.Own == nil {
				r.Own, ins = make([]*verdict.Inputs, len(t.ranks)), make([]verdict.Inputs, len(t.ranks))
			}
			ins[i] = judge.Inputs(w)
			r.Own[i] = &ins[i]
		}
	}
	if ok {
		shown.Ranks = append(sums, t.absent...)
		in := judge.Inputs(shown)
		r.Shown = &in
	}
	return r
}

// fill sets the trainer parts of s from the views and the judgement: the
// run's verdict and, by rank, each rank's own.
func (t *trainerSide) fill(s *snapshot.Snapshot, j verdict.Judgement) {
	v := &t.shown
	s.Link, s.Trainer, s.Summary, s.Verdict, s.Loader, s.Totals, s.Code = v.Link, v.Trainer, v.Summary, j.Shown, v.Loader, v.Totals, v.Code
	if t.detail != "" {
		s.Link.Detail = t.detail
	}
	if !t.run {
		s.Progress = v.Progress
		return
	}
	s.Ranks = make([]snapshot.Rank, len(t.ranks))
	for i := range t.ranks {
		r := &t.ranks[i]
		s.Ranks[i] = snapshot.Rank{Rank: r.rank, Host: r.host, Link: r.view.Link.State, PID: r.view.PID, Summary: r.view.Summary,
			Trainer: r.view.Trainer, Loader: r.view.Loader, Totals: r.view.Totals}
		if j.Own != nil {
			s.Ranks[i].Verdict = j.Own[i]
		}
	}
}

// summary is what the run's rules read of the rank: its window, where it
// runs, its latest progress and when it was last heard from; ok is false
// for a rank never connected.
func (r *rankView) summary() (verdict.RankSummary, bool) {
	v := &r.view
	sum := verdict.RankSummary{Rank: r.rank, PID: v.PID, Host: r.host, Progress: v.Progress}
	switch v.Link.State {
	case snapshot.LinkConnected:
		if !v.Heard.IsZero() {
			sum.HeardNs = v.Heard.UnixNano()
		}
	case snapshot.LinkDisconnected:
		sum.Gone = true
	default:
		return sum, false
	}
	if v.Summary != nil {
		sum.Summary = *v.Summary
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

// Fresh is s with the totals of each trainer process it shows brought up
// to now, when the feed still holds that process (same pid and start
// time): the exporter takes it at each scrape, so that counters are as
// fresh as the scrape, whatever the sampling interval. s is not changed;
// a snapshot of a Remote is returned as it is.
func (c *Snapshotter) Fresh(s *snapshot.Snapshot) *snapshot.Snapshot {
	if c.Remote != nil {
		return s
	}
	out := *s
	if len(s.Ranks) == 0 {
		out.Totals = freshTotals(c.Feed, s.Trainer, s.Totals)
		return &out
	}
	if c.Group == nil {
		return s
	}
	feeds := c.Group.Feeds()
	out.Ranks = slices.Clone(s.Ranks)
	for i := range out.Ranks {
		r := &out.Ranks[i]
		if j := slices.IndexFunc(feeds, func(rf RankFeed) bool { return rf.Rank == r.Rank }); j >= 0 {
			r.Totals = freshTotals(feeds[j].Feed, r.Trainer, r.Totals)
		}
	}
	return &out
}

// freshTotals are f's totals when they count the process t shows, else
// old.
func freshTotals(f *feed.Feed, t *snapshot.Trainer, old *stage.Totals) *stage.Totals {
	if t == nil {
		return old
	}
	counts, pid, startNs, ok := f.Totals()
	var want int64
	if t.Started != nil {
		want = t.Started.UnixNano()
	}
	if !ok || pid != t.PID || startNs != want {
		return old
	}
	return counts
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

// memHistory remembers the trainer's resident and GPU memory over the last
// HistoryLen refreshes, for the memory-creep rule, and the bytes it wrote
// a second, for the size of a checkpoint.
type memHistory struct {
	pid                 int
	rss, gpuMem, writes verdict.Series
}

// add appends this refresh's samples of h (source.HostFiller) to the
// history of the trainer pid and gives h the whole history; a new pid
// starts it afresh.
func (m *memHistory) add(pid int, h *verdict.Host) {
	if pid != m.pid {
		*m = memHistory{pid: pid}
	}
	addCapped(&m.rss, h.RSS)
	addCapped(&m.gpuMem, h.GPUMem)
	addCapped(&m.writes, h.Writes)
	h.RSS, h.GPUMem, h.Writes = m.rss, m.gpuMem, m.writes
}

// addCapped appends the samples of add to s, dropping the oldest beyond
// HistoryLen.
func addCapped(s *verdict.Series, add verdict.Series) {
	for i, t := range add.TimeNs {
		if len(s.TimeNs) >= HistoryLen {
			s.TimeNs = append(s.TimeNs[:0], s.TimeNs[1:]...)
			s.Value = append(s.Value[:0], s.Value[1:]...)
		}
		s.Add(t, add.Value[i])
	}
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
		v := d.Readings[gpumetric.SMActivity]
		if !v.OK() {
			v = d.Readings[gpumetric.KernelActive]
		}
		if v.OK() && (math.IsNaN(best) || *v.Value > best) {
			best = *v.Value
		}
	}
	return best
}
