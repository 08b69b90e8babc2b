// Package feed receives a trainer's frames off the UI loop: it runs
// ipc.Watch, keeps each step record once, in a stage.StepRing (the totals
// and the drift baseline count it without keeping it), and remembers the
// trainer's hello, loader statistics, last event and link state, so that a
// refresh only has to summarize what is already there and hand it over in
// one View. A lost trainer keeps its last state; a restarted one is found
// again by name.
package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/judge"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/stacks"
)

// DefaultCapacity is how many steps a Feed holds: two minutes at 1,000
// steps/s. Memory is touched only as steps arrive.
const DefaultCapacity = 1 << 17

// AggCapacity is how many aggregates a Feed holds: about four minutes.
const AggCapacity = 256

// Feed is the viewer's copy of one trainer's stream. It is safe for
// concurrent use: frames arrive on the Watch goroutine while the UI reads.
type Feed struct {
	mu       sync.Mutex
	capacity int
	win      *stage.StepRing
	aggs     *stage.AggRing // the window as agg frames, from a trainer that sends them
	totals   *stage.Totals  // of the current trainer process
	hello    *ipc.Hello
	ep       ipc.Endpoint
	link     snapshot.Link
	loader   *stage.LoaderStats
	progress *stage.Progress   // the latest in-flight sample
	heard    time.Time         // when the last hello or frame arrived
	base     *verdict.Baseline // the run's first minutes, for drift
	baseKey  baselineKey       // what baseSum summarizes
	baseSum  *stage.Summary    // the latest baseline summary (nil: too few steps)
	event    *ipc.Event
	code     codeWindow // the stacks frames, profiled per window
	config   configInfo // parsed from the hello
	phase    string     // the running bisect phase, from "phase" events
	dropped  int64
	total    int64 // steps received since the Feed was made
	gen      int   // attach generation; messages of older ones are ignored
	cancel   context.CancelFunc
	tap      func(m ipc.Message, now time.Time)
	view     ipc.ViewOptions     // what the next attach asks of the trainer
	hz       float64             // the outside stack sampler's rate (ReadStacks)
	outside  *stacks.Sampler     // reads the trainer's stacks from outside; nil: none
	earlier  *stage.StackSamples // what earlier samplers read of outside's trainer (before a reconnect)
	// brief: the feed of a rank a run's view shows in brief (NewBrief).
	brief bool
}

// New returns a Feed holding up to capacity steps (DefaultCapacity if < 1).
func New(capacity int) *Feed {
	if capacity < 1 {
		capacity = DefaultCapacity
	}
	return &Feed{capacity: capacity, win: stage.NewStepRing(nil, capacity), aggs: stage.NewAggRing(nil, AggCapacity),
		base: verdict.NewBaseline(nil), totals: stage.NewTotals(nil), link: snapshot.Link{State: snapshot.LinkNone}}
}

// NewBrief returns a Feed for a rank that a run's view shows in brief
// (monitor.Snapshotter.BriefRanks): it keeps the link, hello, progress and
// the window, its aggregates as brief copies (stage.Aggregate.Brief), and
// no totals, drift baseline, loader statistics or stack samples, which
// nothing reads of such a rank. Its summaries are brief ones, and its
// View leaves the parts it does not keep nil.
func NewBrief(capacity int) *Feed {
	f := New(capacity)
	f.brief = true
	return f
}

// SetView sets what the next Attach asks of the trainer (frame batching).
// A view that reads stacks from outside (Inside set, ReadStacks) reads
// them into this feed.
func (f *Feed) SetView(o ipc.ViewOptions) {
	f.mu.Lock()
	if o.Inside != nil {
		f.hz = stacks.Hz(os.Getenv)
		o.Inside = f.inside
	}
	f.view = o
	f.mu.Unlock()
}

// Attach starts watching the trainer that spec names (a socket path, pid
// or name; empty for the only live one), replacing any previous watch. The
// first trainer found pins the name, so a restart with a new pid is
// re-attached. The watch ends with ctx or the next Attach.
func (f *Feed) Attach(ctx context.Context, spec string) {
	socket := ""
	if strings.Contains(spec, "/") {
		socket = spec
	}
	f.watch(ctx, describe(spec), socket, func(gen int) ipc.Resolver { return f.resolver(gen, spec) })
}

// AttachConn is Attach whose first connection is conn, made to the
// trainer at ep with the feed's view options (ipc.DialView): the feed
// watches on it, and reconnects to the trainer spec names (ep's name from
// then on) when it ends.
func (f *Feed) AttachConn(ctx context.Context, spec string, ep ipc.Endpoint, conn *ipc.Conn) {
	socket := ""
	if strings.Contains(spec, "/") {
		socket = spec
	}
	f.start(ctx, describe(spec), socket, func(ctx context.Context, gen int, deliver func(ipc.Message), view ipc.ViewOptions) {
		if ep.Name != "" {
			spec = ep.Name
		}
		ipc.WatchConn(ctx, conn, ep, f.resolver(gen, spec), deliver, view)
	})
}

// AttachResolver is Attach for a trainer that resolve finds, asked again
// before every reconnection (the monitor's rank of a run); what names it
// in the link's detail until it is found.
func (f *Feed) AttachResolver(ctx context.Context, what string, resolve ipc.Resolver) {
	f.watch(ctx, what, "", func(gen int) ipc.Resolver {
		return func() (ipc.Endpoint, error) {
			ep, err := resolve()
			if err != nil {
				f.mu.Lock()
				if gen == f.gen && f.link.State != snapshot.LinkConnected {
					f.link.Detail = err.Error()
				}
				f.mu.Unlock()
			}
			return ep, err
		}
	})
}

func (f *Feed) watch(ctx context.Context, what, socket string, resolver func(gen int) ipc.Resolver) {
	f.start(ctx, what, socket, func(ctx context.Context, gen int, deliver func(ipc.Message), view ipc.ViewOptions) {
		ipc.Watch(ctx, resolver(gen), deliver, view)
	})
}

// start starts a new watch, replacing any previous one: run watches until
// ctx ends, handing each message to deliver with the view options the
// feed was set.
func (f *Feed) start(ctx context.Context, what, socket string, run func(ctx context.Context, gen int, deliver func(ipc.Message), view ipc.ViewOptions)) {
	ctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	if f.cancel != nil {
		f.cancel()
	}
	f.cancel = cancel
	f.gen++
	gen := f.gen
	if f.hello != nil {
		f.reset(nil)
		f.totals = stage.NewTotals(nil)
		f.hello, f.loader, f.event, f.dropped = nil, nil, nil, 0
		f.progress = nil
	}
	f.link.Socket = socket // a socket path: named while connecting
	f.setLink(snapshot.LinkNone, "looking for "+what, "", time.Now())
	view := f.view
	f.mu.Unlock()
	go run(ctx, gen, func(m ipc.Message) {
		f.apply(gen, m, time.Now())
		ipc.Recycle(m.Frame) // its steps are in the rings now
	}, view)
}

func describe(spec string) string {
	if spec == "" {
		return "a trainer in " + ipc.Dir()
	}
	return "trainer " + spec
}

// Reset forgets the trainer: no hello, no steps, no link (replays seeking
// backwards start over with it).
func (f *Feed) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reset(nil)
	f.hello, f.loader, f.event, f.phase, f.dropped, f.total = nil, nil, nil, "", 0, 0
	f.code = codeWindow{}
	f.link = snapshot.Link{State: snapshot.LinkNone}
}

// Close stops the watch. What the feed holds stays, but its link no
// longer promises a next try.
func (f *Feed) Close() {
	f.mu.Lock()
	if f.cancel != nil {
		f.cancel()
	}
	f.gen++
	f.link.RetryAt = time.Time{}
	f.mu.Unlock()
	f.swapOutside(nil)
}

// resolver resolves spec and then sticks to the name of what it found.
func (f *Feed) resolver(gen int, spec string) ipc.Resolver {
	return func() (ipc.Endpoint, error) {
		ep, err := ipc.ResolveSpec(spec)()
		f.mu.Lock()
		defer f.mu.Unlock()
		if gen != f.gen {
			return ep, err
		}
		if err != nil {
			// A failure stays on show until a connection succeeds, even
			// when the socket has gone since.
			if f.link.State != snapshot.LinkConnected && f.link.State != snapshot.LinkFailed {
				f.link.Detail = err.Error()
			}
			return ep, err
		}
		if ep.Name != "" {
			spec = ep.Name
		}
		return ep, nil
	}
}

// Apply feeds one message as if it came from the current watch; replays
// and tests use it.
func (f *Feed) Apply(m ipc.Message, now time.Time) {
	f.mu.Lock()
	gen := f.gen
	f.mu.Unlock()
	f.apply(gen, m, now)
}

// SetTap makes fn see every message the feed applies from now on, in
// order, before it is applied (recordings); nil stops it. A trainer
// already connected is first passed as its connection, with the current
// stage list. fn runs with the feed locked: it must be quick and must not
// call the Feed.
func (f *Feed) SetTap(fn func(m ipc.Message, now time.Time)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tap = fn
	if fn != nil && f.hello != nil && f.link.State == snapshot.LinkConnected {
		h := *f.hello
		h.Stages = slices.Clone(f.win.Names())
		fn(ipc.Message{Connected: &h, Endpoint: f.ep}, time.Now())
	}
}

func (f *Feed) apply(gen int, m ipc.Message, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.gen {
		return
	}
	if f.tap != nil {
		f.tap(m, now)
	}
	switch {
	case m.Connected != nil:
		f.heard = now
		f.connected(m, now)
	case m.Frame != nil:
		f.heard = now
		f.frame(m.Frame)
	case m.Failed != nil:
		f.setLink(snapshot.LinkFailed, m.Failed.Error(), m.Endpoint.Path, now)
		f.link.RetryAt = m.RetryAt
	default:
		detail := "connection lost"
		if m.Disconnected != nil {
			detail = m.Disconnected.Error()
		}
		state := snapshot.LinkDisconnected
		if f.hello == nil {
			state = snapshot.LinkNone
		}
		f.setLink(state, detail, m.Endpoint.Path, now)
		var ae *ipc.AttachError
		if errors.As(m.Disconnected, &ae) {
			// A bad frame mid-stream: retried slowly, so say when.
			f.link.RetryAt = m.RetryAt
		}
	}
}

// connected records a new hello; a different process or stage list starts
// a fresh window, a reconnection to the same process keeps it. The totals
// last as long as the process: a new one starts them from zero (a counter
// reset to Prometheus).
func (f *Feed) connected(m ipc.Message, now time.Time) {
	h := *m.Connected
	same := f.hello != nil && f.hello.PID == h.PID && f.hello.StartNs == h.StartNs
	if !same {
		f.totals = stage.NewTotals(h.Stages)
	} else {
		f.totals.SetStages(h.Stages)
	}
	if !same || !slices.Equal(f.win.Names(), h.Stages) {
		f.reset(h.Stages)
		f.loader, f.event, f.dropped = nil, nil, 0
		f.progress = nil
	}
	if !same {
		f.code = codeWindow{}
	}
	f.hello, f.ep = &h, m.Endpoint
	f.config = parseConfig(h.Config) // once per connection, not per refresh
	if f.config.Phase != "" && (!same || f.phase == "") {
		f.phase = f.config.Phase // a bisect phase named in the hello: no event to miss
	}
	f.setLink(snapshot.LinkConnected, "", m.Endpoint.Path, now)
}

// linkAt is the link as shown at now: the detail of a link that waits to
// retry says when the next try is.
func (f *Feed) linkAt(now time.Time) snapshot.Link {
	l := f.link
	if l.RetryAt.IsZero() {
		return l
	}
	if left := l.RetryAt.Sub(now); left > 0 {
		l.Detail += fmt.Sprintf("; next try in %ds", int((left+time.Second-1)/time.Second))
	} else {
		l.Detail += "; trying again now"
	}
	return l
}

func (f *Feed) frame(fr *ipc.Frame) {
	switch fr.Type {
	case ipc.TypeSteps:
		f.steps(fr.Steps)
	case ipc.TypeAgg:
		f.aggregate(fr.Agg)
	case ipc.TypeBackfill:
		f.backfill(fr.Steps)
	case ipc.TypeStages:
		f.reset(fr.Stages)
		f.totals.SetStages(fr.Stages)
		if f.hello != nil {
			f.hello.Stages = append([]string(nil), fr.Stages...)
		}
	case ipc.TypeLoader:
		if !f.brief {
			l := *fr.Loader
			f.loader = &l
		}
	case ipc.TypeEvent:
		e := *fr.Event
		f.event = &e
		if e.Kind == "phase" {
			// A new bisect phase measures something else: start the window
			// afresh so the flame bar shows this phase alone. The last
			// phase's progress says nothing about this one's setup.
			f.phase = e.Msg
			f.reset(f.win.Names())
			f.progress = nil
		}
	case ipc.TypeDrops:
		f.dropped = fr.Dropped
	case ipc.TypeProgress:
		p := *fr.Progress
		f.progress = &p
	case ipc.TypeStacks:
		if !f.brief {
			f.code.add(fr.Stacks)
		}
	}
}

// steps takes in a steps frame's records. The window (the step ring) is
// the one place a record is kept; the process's totals (the exporter's
// counters and histograms) and the run's baseline (per-second sums of its
// first minutes, for drift) add it to their counts without keeping it, and
// a brief feed keeps neither.
func (f *Feed) steps(rs []stage.Record) {
	for i := range rs {
		f.win.Add(&rs[i])
		if !f.brief {
			f.totals.Add(&rs[i])
			f.base.Add(&rs[i])
		}
	}
	f.total += int64(len(rs))
}

// backfill takes in the steps the trainer finished before this viewer
// attached (its recent window, once, right after the hello): they join the
// window before the steps that came live meanwhile, so that a one-shot or a
// fresh view judges a run of slow steps from the first second. The
// process's totals and the drift baseline count from the attach, as
// before: the steps before it are not theirs to count. A trainer sends it
// before its first agg frame to this viewer; one that comes after is left
// out.
func (f *Feed) backfill(rs []stage.Record) {
	if f.aggs.Len() > 0 {
		return
	}
	f.win.Prepend(rs)
	f.total += int64(len(rs))
}

// aggregate keeps an agg frame's aggregate (a brief copy in a brief feed)
// in the window and adds it to the totals and the baseline, as steps does
// a record.
func (f *Feed) aggregate(g *stage.Aggregate) {
	if f.aggs.Len() == 0 && f.win.Len() > 0 {
		// The steps that came raw before the viewer's hello was read
		// (and its backfill) join the window as aggregates of about the
		// trainer's interval.
		for _, a := range f.win.Aggregates(ipc.AggregateEvery) {
			f.keep(a)
		}
		f.win.Reset()
	}
	f.keep(*g)
	if !f.brief {
		f.totals.AddAggregate(g)
		f.base.AddAggregate(g)
	}
	f.total += g.Steps
}

// keep adds g to the window, as a brief copy in a brief feed (g as it
// is when it came brief: no frame shares it).
func (f *Feed) keep(g stage.Aggregate) {
	if f.brief && !g.IsBrief() {
		g = g.Brief()
	}
	f.aggs.Add(g)
}

func (f *Feed) reset(names []string) {
	f.win = stage.NewStepRing(names, f.capacity)
	f.aggs = stage.NewAggRing(names, AggCapacity)
	f.base = verdict.NewBaseline(names)
}

// baseline is the run's first minutes as a viewer judges drift against
// them at nowNs (verdict.Baseline.At). The summary is kept until its end,
// which moves in whole seconds, moves: a viewer summarizes the baseline
// once per three seconds while it grows and never again once it is
// complete, not on every refresh.
func (f *Feed) baseline(nowNs int64) *stage.Summary {
	key := baselineKey{base: f.base, whole: f.base.WholeAt(nowNs)}
	if key != f.baseKey {
		f.baseKey, f.baseSum = key, f.base.At(nowNs)
	}
	return f.baseSum
}

// baselineKey names what a baseline summary was made of.
type baselineKey struct {
	base  *verdict.Baseline
	whole int // seconds since the first step
}

func (f *Feed) setLink(state, detail, socket string, now time.Time) {
	if f.link.State != state {
		f.link.Since = now
	}
	f.link.State, f.link.Detail, f.link.RetryAt = state, detail, time.Time{}
	if socket != "" {
		f.link.Socket = socket
	}
}

// Totals returns a copy of the current trainer process's totals and that
// process's pid and start time (as in its hello); ok is false before any
// hello, and in a brief feed, which keeps none. The snapshotter reads it
// for each scrape of the exporter (monitor.Snapshotter.Fresh), so counters
// are as fresh as the scrape, whatever the sampling interval.
func (f *Feed) Totals() (t *stage.Totals, pid int, startNs int64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hello == nil || f.brief {
		return nil, 0, 0, false
	}
	return f.totals.Clone(), f.hello.PID, f.hello.StartNs, true
}

// View is a trainer's side of one refresh, read under the feed's lock in
// one go: what the snapshot shows of the trainer and what its verdict
// reads. A brief one (View's brief, for a rank a run's view shows in
// brief) holds only Link, PID, Progress, Summary, Heard and Steps.
type View struct {
	Link snapshot.Link
	// Trainer is nil before the hello and in a brief view.
	Trainer *snapshot.Trainer
	// PID is the trainer's pid as in its hello (Trainer.PID), 0 before it.
	PID int
	// Summary summarizes the window's steps; nil without steps or before
	// the hello. It is a brief summary (stage.AggRing.Brief) in a brief
	// view or feed of a trainer that sends agg frames.
	Summary  *stage.Summary
	Loader   *stage.LoaderStats
	Progress *stage.Progress // the latest in-flight sample; nil when none came
	// Totals are a copy of the trainer process's counts; nil in a brief
	// view or feed, which keeps none.
	Totals *stage.Totals
	// Code profiles the window's stack samples; nil without any.
	Code *stage.CodeProfile
	// Baseline summarizes the run's first minutes, for drift; nil until it
	// holds enough steps, without a window summary, and in brief.
	Baseline *stage.Summary
	// BaselineFirst is the number of the first step the baseline saw.
	BaselineFirst int64
	// StartNs is when the trainer started (Unix ns), else when the link
	// last changed.
	StartNs int64
	Heard   time.Time // when the last hello or frame arrived; zero before any
	Steps   int64     // steps received since the Feed was made
	// WatchPID is the pid to watch for the trainer's process tree and GPU
	// use (its pid as seen from this host), 0 before the hello.
	WatchPID int
	// TrainingTID is the training thread's id from the hello, 0 when the
	// trainer named none or lives in another pid namespace (its tid would
	// not be this /proc's).
	TrainingTID int
}

// View returns the trainer's side at now over the window w: the steps
// that ended within w of the newest one are summarized; now is the clock
// of the uptime and the baseline. brief gives a rank's brief view, without
// the copies of the trainer, loader, totals and stack samples that a full
// view makes.
func (f *Feed) View(now time.Time, w snapshot.Window, brief bool) View {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := View{Link: f.linkAt(now), Heard: f.heard, Steps: f.total}
	if f.hello == nil {
		return v
	}
	v.PID = f.hello.PID
	if f.progress != nil {
		p := *f.progress
		v.Progress = &p
	}
	d := time.Duration(w.Seconds * float64(time.Second))
	if sum, ok := f.summarize(d, brief || f.brief); ok {
		v.Summary = &sum
	}
	if brief {
		return v
	}
	f.full(&v, now, w)
	return v
}

// full adds to v what a full view holds besides a brief one's.
func (f *Feed) full(v *View, now time.Time, w snapshot.Window) {
	h := f.hello
	v.Trainer = f.trainer(now)
	v.WatchPID, v.TrainingTID = watched(h)
	v.StartNs = h.StartNs
	if v.StartNs == 0 {
		v.StartNs = f.link.Since.UnixNano()
	}
	if !f.brief {
		v.Code = f.code.profile(w.Seconds, v.Summary)
		v.Totals = f.totals.Clone()
	}
	if f.loader != nil {
		l := *f.loader
		v.Loader = &l
	}
	if v.Summary == nil {
		return
	}
	v.Baseline, v.BaselineFirst = f.baseline(now.UnixNano()), f.base.First()
	if n := v.Trainer.EpochSteps; n > 0 && v.Summary.StepsPerSec > 0 && f.link.State == snapshot.LinkConnected {
		left := n - (v.Summary.LastStep+1)%n
		v.Trainer.EpochETASec = float64(left) / v.Summary.StepsPerSec
	}
}

// Watched is the pid to watch for the trainer's process tree and GPU use
// and its training thread, as View's WatchPID and TrainingTID, without a
// view: what a refresh that reads only the host samples (0, 0 before the
// hello).
func (f *Feed) Watched() (pid, tid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hello == nil {
		return 0, 0
	}
	return watched(f.hello)
}

// watched is the trainer's pid as seen from this host and its training
// thread's id (0 when it lives in another pid namespace).
func watched(h *ipc.Hello) (pid, tid int) {
	pid = h.PID
	if h.HostPID > 0 {
		pid = h.HostPID
	}
	if h.HostPID <= 0 || h.HostPID == h.PID {
		tid = h.TID
	}
	return pid, tid
}

// Window is what the verdict rules read of this trainer side, judged at
// nowNs: the window, loader, progress, stack samples, link, start time and
// the run's first minutes. The host readings and the run's ranks are the
// snapshotter's to add. ok is false without a trainer (before its hello,
// or in a brief view): there is nothing to judge.
func (v *View) Window(nowNs int64) (w judge.Window, ok bool) {
	if v.Trainer == nil {
		return judge.Window{}, false
	}
	w = judge.Window{Loader: v.Loader, Progress: v.Progress, NowNs: nowNs, Live: v.Link.State == snapshot.LinkConnected,
		StartNs: v.StartNs, Code: v.Code, Baseline: v.Baseline, BaselineFirst: v.BaselineFirst}
	if v.Summary != nil {
		w.Summary = *v.Summary
	}
	return w, true
}

// summarize summarizes the window d: of the aggregates once the trainer
// sends them (it sent the steps before them raw, the few that ended
// before its viewer's hello was read), in brief with brief, else of the
// steps.
func (f *Feed) summarize(d time.Duration, brief bool) (stage.Summary, bool) {
	switch {
	case f.aggs.Len() > 0 && brief:
		return f.aggs.Brief(d), true
	case f.aggs.Len() > 0:
		return f.aggs.Summarize(d), true
	case f.win.Len() > 0:
		return f.win.Summarize(d), true
	}
	return stage.Summary{}, false
}

func (f *Feed) trainer(now time.Time) *snapshot.Trainer {
	h := f.hello
	t := &snapshot.Trainer{Name: h.Name, PID: h.PID, HostPID: h.HostPID, Socket: f.ep.Path,
		Stages: append([]string(nil), f.win.Names()...), Config: h.Config, Dropped: f.dropped}
	if t.Name == "" {
		t.Name = f.ep.Name
	}
	if h.StartNs > 0 {
		st := time.Unix(0, h.StartNs).UTC()
		t.Started = &st
		t.UptimeSec = max(0, now.Sub(st).Seconds())
	}
	if f.event != nil {
		e := *f.event
		t.LastEvent = &e
	}
	t.Phase = f.phase
	t.Rank, t.WorldSize, t.Run = h.Rank, h.WorldSize, h.Run
	t.EpochSteps, t.Synthetic = f.config.EpochSteps, f.config.Kind == "synthetic"
	return t
}

// configInfo is what the viewer reads from a trainer's free-form config.
type configInfo struct {
	EpochSteps int64  `json:"epoch_steps"`  // steps per epoch, for the ETA
	Kind       string `json:"kind"`         // "synthetic" marks the test publisher
	Phase      string `json:"bisect_phase"` // the pipetop bisect phase or tune trial the process runs
}

// parseConfig reads the optional fields pipetop uses; anything else, or a
// config that is not an object, is ignored.
func parseConfig(cfg json.RawMessage) configInfo {
	var c configInfo
	if len(cfg) == 0 || json.Unmarshal(cfg, &c) != nil {
		return configInfo{}
	}
	c.EpochSteps = max(0, c.EpochSteps)
	return c
}

// Link returns the state of the connection, as View would show it now.
func (f *Feed) Link() snapshot.Link {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.linkAt(time.Now())
}
