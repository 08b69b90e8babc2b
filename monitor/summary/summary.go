// Package summary turns a recording into the summary of a whole run
// (throughput over time, the stage table, the verdicts the run went
// through and for how long), and compares two runs. The JSON form is
// documented in docs/recording.md and is what `pipetop compare` reads.
//
// It also holds the end-of-run files of pipetop run, each one struct with
// its reader and writer: a Python process's pipetop-summary/2 (Script,
// script.go) and the pipetop-job/1 of a run of several ranks (Job,
// job.go), with their text (scripttext.go).
package summary

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/judge"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/cpu"
	"github.com/pipetop/pipetop/monitor/sources/procs"
	"github.com/pipetop/pipetop/monitor/sources/threads"
)

// Version is the version of the summary JSON.
const Version = 1

// VerdictWindow is the span of steps each verdict over time covers, as
// pipetop export's default window does, and the end of a whole run judged
// for drift.
const VerdictWindow = judge.EndWindow

// Run is the summary of one recorded run.
type Run struct {
	Version     int     `json:"summary_version"`
	Name        string  `json:"name"`
	PID         int     `json:"pid"`
	Source      string  `json:"source"` // the file it was made from
	StartNs     int64   `json:"start_ns"`
	DurationSec float64 `json:"duration_sec"` // first step start to last step end
	// Whole is the stage table over every step of the run (the last trainer
	// process, when it restarted with another stage list).
	Whole stage.Summary `json:"whole"`
	// Verdict is the verdict over the whole run.
	Verdict verdict.Verdict `json:"verdict"`
	// Over time: one point per bucket, about 60 over the run.
	BucketSec  float64  `json:"bucket_sec"`
	Throughput []Point  `json:"throughput"`
	Verdicts   []Period `json:"verdicts"`
	// Ranks is each rank's stage table over the run when the recording
	// holds several ranks of one run; everything above is then the lowest
	// rank's, but for Verdict, which names a straggler when one stands out.
	// Nil for a single-process trainer.
	Ranks []RankRun `json:"ranks,omitempty"`
	// Damage names where a damaged recording stopped being readable.
	Damage string `json:"damage,omitempty"`
	// Code is the profile of the run's stack samples (the lowest rank's);
	// absent without any.
	Code *stage.CodeProfile `json:"code,omitempty"`
	// CPU is the run's CPU use from the recorded threads part; absent
	// without one.
	CPU *CPUUse `json:"cpu,omitempty"`
}

// RankRun is one rank's part of a recorded run.
type RankRun struct {
	Rank  int           `json:"rank"`
	PID   int           `json:"pid"`
	Whole stage.Summary `json:"whole"`
}

// Point is one bucket of the run: its steps' rate and mean wall time, and
// each stage's share of it.
type Point struct {
	AtSec       float64            `json:"at_sec"` // bucket end, since the first step
	Steps       int                `json:"steps"`
	StepsPerSec float64            `json:"steps_per_sec"`
	WallMeanNs  float64            `json:"wall_mean_ns"`
	Shares      map[string]float64 `json:"shares"`
	// SamplesPerSec is the bucket's samples over its span; 0 when the
	// steps carry no sample counts.
	SamplesPerSec float64 `json:"samples_per_sec"`
	// WallP50Ns and WallP99Ns are the bucket's step time percentiles.
	WallP50Ns float64 `json:"wall_p50_ns"`
	WallP99Ns float64 `json:"wall_p99_ns"`
}

// Period is a stretch of the run under one verdict.
type Period struct {
	Kind     verdict.Kind `json:"kind"`
	Stage    string       `json:"stage,omitempty"`
	Headline string       `json:"headline"`
	FromSec  float64      `json:"from_sec"`
	ToSec    float64      `json:"to_sec"`
}

// FromFile summarizes the recording at path. A damaged recording is
// summarized up to the damage, which Damage names.
func FromFile(path string) (Run, error) {
	_, es, err := recording.ReadAll(path)
	if es == nil && err != nil {
		return Run{}, err
	}
	r := FromEntries(es)
	r.Source = path
	if err != nil {
		r.Damage = err.Error()
	}
	return r, nil
}

// FromEntries summarizes recorded entries.
func FromEntries(es []recording.Entry) Run {
	b := newBuilder(es)
	for _, e := range es {
		b.add(e)
	}
	return b.finish()
}

// builder walks the entries once, in order.
type builder struct {
	run     Run
	main    *track         // the trainer, or the lowest rank of a run
	ranks   map[int]*track // every rank of a run, main included; nil for one trainer
	loader  *stage.LoaderStats
	code    *stage.CodeRing // the main track's stack samples
	bucket  time.Duration
	first   int64 // first step's start, ns
	edge    int64 // current bucket's end, ns
	inBkt   []stage.Record
	periods []Period
	cpu     cpuSums
	host    CPUMeans          // the CPU rules' readings while the run trained
	rss     verdict.Series    // the trainer's newest resident-memory readings (KeptRSS)
	base    *verdict.Baseline // the main track's first minutes, for drift
	// recent are the CPU readings of the buckets an over-time verdict's
	// window covers, each with the bucket it arrived in (nBuckets then).
	recent   []bucketCPU
	nBuckets int
}

// bucketCPU is one refresh's CPU readings and the bucket they arrived in.
type bucketCPU struct {
	bucket int
	cpu    *verdict.HostCPU
}

// track is the steps of one trainer process or rank.
type track struct {
	name  string
	pid   int
	names []string        // its current stage list
	ring  *stage.StepRing // every step under that list
}

// setNames starts the track's steps afresh under a new stage list;
// changed is false when names is its list already.
func (t *track) setNames(names []string) (changed bool) {
	if slices.Equal(names, t.names) {
		return false
	}
	t.names = slices.Clone(names)
	t.ring = stage.NewStepRing(t.names, t.ring.Cap())
	return true
}

func newBuilder(es []recording.Entry) *builder {
	steps := map[int]int{} // by rank, -1 for a single trainer
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, e := range es {
		if e.Frame != nil && e.Frame.Type == ipc.TypeSteps {
			steps[rankKey(e.Rank)] += len(e.Frame.Steps)
			for i := range e.Frame.Steps {
				lo, hi = min(lo, e.Frame.Steps[i].StartNs), max(hi, e.Frame.Steps[i].EndNs)
			}
		}
	}
	span := time.Duration(max(0, hi-lo))
	bucket := max(time.Second, (span / 60).Round(time.Second))
	b := &builder{run: Run{Version: Version}, bucket: bucket, first: -1}
	newTrack := func(k int) *track { return &track{ring: stage.NewStepRing(nil, max(1, steps[k]))} }
	b.main = newTrack(-1)
	for _, e := range es {
		if e.Rank == nil {
			continue
		}
		if b.ranks == nil {
			b.ranks = map[int]*track{}
		}
		if _, ok := b.ranks[*e.Rank]; !ok {
			b.ranks[*e.Rank] = newTrack(*e.Rank)
		}
	}
	if len(b.ranks) > 0 {
		b.main = b.ranks[slices.Min(slices.Collect(maps.Keys(b.ranks)))]
	}
	return b
}

// setNames sets t's stage list; a new one on the main track starts its
// drift baseline afresh, as the live view's.
func (b *builder) setNames(t *track, names []string) {
	if t.setNames(names) && t == b.main {
		b.base = nil
	}
}

// rankKey is a rank, or -1 for a single trainer.
func rankKey(rank *int) int {
	if rank == nil {
		return -1
	}
	return *rank
}

// trackOf is the track an entry of rank belongs to.
func (b *builder) trackOf(rank *int) *track {
	if rank == nil || b.ranks == nil {
		return b.main
	}
	return b.ranks[*rank]
}

func (b *builder) add(e recording.Entry) {
	t := b.trackOf(e.Rank)
	switch {
	case e.Hello != nil:
		t.name, t.pid = e.Hello.Name, e.Hello.PID
		b.setNames(t, e.Hello.Stages)
	case e.Host != nil:
		b.addRSS(e.T, e.Host)
		if raw, ok := e.Host["threads"]; ok {
			b.cpu.add(raw)
			b.addHost(e.Host)
		}
	case e.Frame == nil:
	case e.Frame.Type == ipc.TypeStages:
		b.setNames(t, e.Frame.Stages)
	case e.Frame.Type == ipc.TypeLoader && t == b.main:
		l := *e.Frame.Loader
		b.loader = &l
	case e.Frame.Type == ipc.TypeStacks && t == b.main:
		if b.code == nil {
			b.code = stage.NewCodeRing(math.MaxInt32)
		}
		b.code.Add(e.Frame.Stacks)
	case e.Frame.Type == ipc.TypeSteps:
		for i := range e.Frame.Steps {
			if t == b.main {
				b.step(&e.Frame.Steps[i])
			} else {
				t.ring.Add(&e.Frame.Steps[i])
			}
		}
	}
}

// addHost adds one recorded refresh's CPU readings to the run's means,
// once the run has trained (as pipetop run keeps them), and to those of
// the over-time verdicts' window.
func (b *builder) addHost(h recording.Host) {
	if b.first < 0 {
		return
	}
	var s snapshot.Snapshot
	for _, p := range []source.Part{threads.Part, cpu.Part} {
		if raw, ok := h[p.Name()]; ok && p.Load(&s, raw) != nil {
			return
		}
	}
	var host verdict.Host
	threads.Part.FillHost(&s, &host)
	if host.CPU == nil {
		return
	}
	b.host.Add(host.CPU)
	b.recent = append(b.recent, bucketCPU{b.nBuckets, host.CPU})
}

// addRSS keeps the trainer's resident memory of a recorded process
// reading at t, once the run trains: the newest KeptRSS, as pipetop run
// keeps them, for memory creep over the whole run.
func (b *builder) addRSS(t time.Time, h recording.Host) {
	raw, ok := h[procs.Part.Name()]
	if !ok || b.first < 0 {
		return
	}
	s := snapshot.Snapshot{Time: t}
	if procs.Part.Load(&s, raw) != nil {
		return
	}
	var host verdict.Host
	procs.Part.FillHost(&s, &host)
	keepRSS(&b.rss, host.RSS)
}

// windowCPU is the CPU readings of the last VerdictWindow of buckets, as
// the over-time verdict closing now judges them; nil without any.
func (b *builder) windowCPU() *verdict.Host {
	oldest := b.nBuckets - int(VerdictWindow/b.bucket) + 1
	i := 0
	for i < len(b.recent) && b.recent[i].bucket < oldest {
		i++
	}
	b.recent = b.recent[i:]
	var m CPUMeans
	for _, r := range b.recent {
		m.Add(r.cpu)
	}
	if c := m.Run().HostCPU(); c != nil {
		return &verdict.Host{CPU: c}
	}
	return nil
}

func (b *builder) step(r *stage.Record) {
	if b.first < 0 {
		b.first = r.StartNs
		b.run.StartNs = r.StartNs
		b.edge = r.StartNs + int64(b.bucket)
	}
	for r.EndNs > b.edge {
		b.closeBucket()
	}
	b.main.ring.Add(r)
	if b.base == nil {
		b.base = verdict.NewBaseline(b.main.names)
	}
	b.base.Add(r)
	b.inBkt = append(b.inBkt, *r)
}

// baseFirst is the number of the first step the baseline saw (0 without
// one).
func (b *builder) baseFirst() int64 {
	if b.base == nil {
		return 0
	}
	return b.base.First()
}

// window is what the verdict of the main track's steps summarized in sum
// is given on, at atNs: with the loader, the CPU readings host and the
// run's first minutes, as the live view holds them then.
func (b *builder) window(sum stage.Summary, atNs int64, host *verdict.Host) judge.Window {
	return judge.Window{Summary: sum, Loader: b.loader, Host: host, Baseline: b.base.At(atNs), BaselineFirst: b.baseFirst()}
}

// closeBucket ends the current bucket: its throughput point and the
// verdict over the VerdictWindow that ends with it.
func (b *builder) closeBucket() {
	at := float64(b.edge-b.first) / 1e9
	p := Point{AtSec: at, Steps: len(b.inBkt), StepsPerSec: float64(len(b.inBkt)) / b.bucket.Seconds(),
		Shares: map[string]float64{}}
	if len(b.inBkt) > 0 {
		tmp := stage.NewStepRing(b.main.names, len(b.inBkt))
		for i := range b.inBkt {
			tmp.Add(&b.inBkt[i])
		}
		sum := tmp.Summarize(0)
		p.WallMeanNs, p.WallP50Ns, p.WallP99Ns = sum.WallMean, sum.WallP50, sum.WallP99
		var samples int64
		for i := range b.inBkt {
			samples += int64(b.inBkt[i].Samples)
		}
		p.SamplesPerSec = float64(samples) / b.bucket.Seconds()
		for _, st := range sum.Stages {
			p.Shares[st.Name] = st.Share
		}
		v := judge.Verdict(b.overTime())
		if sv, ok := b.straggler(VerdictWindow); ok {
			v = sv
		}
		b.period(v, at)
	}
	b.run.Throughput = append(b.run.Throughput, p)
	b.inBkt = b.inBkt[:0]
	b.edge += int64(b.bucket)
	b.nBuckets++
}

// period extends the last period or starts a new one at the verdict v.
func (b *builder) period(v verdict.Verdict, at float64) {
	from := at - b.bucket.Seconds()
	if n := len(b.periods); n > 0 && b.periods[n-1].Kind == v.Kind && b.periods[n-1].Stage == v.Stage {
		b.periods[n-1].ToSec = at
		return
	}
	if n := len(b.periods); n > 0 {
		from = b.periods[n-1].ToSec
	}
	b.periods = append(b.periods, Period{Kind: v.Kind, Stage: v.Stage, Headline: v.Headline, FromSec: max(0, from), ToSec: at})
}

func (b *builder) finish() Run {
	if len(b.inBkt) > 0 {
		b.closeBucket()
	}
	b.run.BucketSec = b.bucket.Seconds()
	b.run.Name, b.run.PID = b.main.name, b.main.pid
	b.run.Whole = b.main.ring.Summarize(0)
	if b.code != nil {
		b.run.Code = b.code.PauseProfile(0, math.MaxInt64, &b.run.Whole)
	}
	b.run.Verdict = judge.Verdict(b.wholeWindow())
	b.finishRanks()
	b.run.DurationSec = float64(b.run.Whole.SpanNs) / 1e9
	b.run.Verdicts = b.periods
	b.run.CPU = b.cpu.use()
	if b.run.Throughput == nil {
		b.run.Throughput = []Point{}
	}
	if b.run.Verdicts == nil {
		b.run.Verdicts = []Period{}
	}
	return b.run
}

// overTime is what the verdict over time closing at the current bucket's
// edge is given on: the main track's last VerdictWindow of steps, with the
// CPU readings and the code of the stack samples of that span, as the
// live view's window at that moment.
func (b *builder) overTime() judge.Window {
	w := b.window(b.main.ring.Summarize(VerdictWindow), b.edge, b.windowCPU())
	if b.code != nil {
		w.Code = b.code.PauseProfile(b.edge-int64(VerdictWindow), b.edge, &w.Summary)
	}
	return b.withEnd(w, b.edge)
}

// wholeWindow is what the whole run's verdict is given on: every step of
// the main track, with the loader, the code of its stack samples, the
// means of the CPU readings while it trained, and its end (judge.EndFrom)
// judged against its first minutes for drift.
func (b *builder) wholeWindow() judge.Window {
	var host *verdict.Host
	if c := b.host.Run().HostCPU(); c != nil {
		host = &verdict.Host{CPU: c}
	}
	last, _ := b.main.ring.Last()
	w := b.window(b.run.Whole, last.EndNs, host)
	w.Code, w.RSS = b.run.Code, b.rss
	return b.withEnd(w, last.EndNs)
}

// withEnd gives w, a window of the main track's steps up to atNs, its end
// (judge.EndFrom) judged for drift against the run's first minutes: a
// window that holds them (the whole run, or one of the first windows over
// time) drifts as its newest steps do.
func (b *builder) withEnd(w judge.Window, atNs int64) judge.Window {
	if w.Baseline != nil {
		end := b.main.ring.SummarizeSince(judge.EndFrom(atNs, w.Baseline))
		w.End = &end
	}
	return w
}

// finishRanks fills the table of ranks and, when one rank holds the others
// back, makes the straggler the run's verdict.
func (b *builder) finishRanks() {
	for _, r := range slices.Sorted(maps.Keys(b.ranks)) {
		t := b.ranks[r]
		b.run.Ranks = append(b.run.Ranks, RankRun{Rank: r, PID: t.pid, Whole: t.ring.Summarize(0)})
	}
	if v, ok := b.straggler(0); ok {
		b.run.Verdict = v
	}
}

// straggler applies the straggler rule to the last d of every rank's steps
// (0: all of them); ok is false for a single trainer.
func (b *builder) straggler(d time.Duration) (v verdict.Verdict, ok bool) {
	var sums []verdict.RankSummary
	for _, r := range slices.Sorted(maps.Keys(b.ranks)) {
		sums = append(sums, verdict.RankSummary{Rank: r, Summary: b.ranks[r].ring.Summarize(d)})
	}
	return verdict.DiagnoseRanks(sums)
}

// Describe is a one-line description of a run for headings.
func (r Run) Describe() string {
	return fmt.Sprintf("%s (pid %d): %d steps in %.1f s", r.Name, r.PID, r.Whole.Steps, r.DurationSec)
}
