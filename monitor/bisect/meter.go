package bisect

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/child"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// Polling: often while waiting for the warm-up to end (the measurement
// starts at a step boundary), once a second while measuring (the thread
// readings are rates over the time between two snapshots).
const (
	warmPoll    = 200 * time.Millisecond
	measurePoll = time.Second
	// rssPoll is how often the tree's RSS is read while measuring: often
	// enough for each third of the window to hold a step's peak.
	rssPoll = 200 * time.Millisecond
	// exitFrames is how long a phase whose command exited waits for the
	// frames still on their way before its last snapshot.
	exitFrames = 300 * time.Millisecond
	// settleTime is how long the measurement waits once the warm-up is over:
	// the viewer summarises a fast loop's steps in one-second aggregates,
	// so a window that began sooner would hold the aggregate of the last
	// warm-up steps (a cached phase's cache fill: seconds of data_wait in
	// one step) in its stage shares.
	settleTime = 1200 * time.Millisecond
)

// count is one rank's cumulative steps and samples, and when its newest
// step ended.
type count struct {
	pid            int
	steps, samples int64
	lastEndNs      int64
}

// meter measures one phase through a monitor attached to its command.
type meter struct {
	c    Config
	name string
	dir  string // the phase's files

	connected bool   // something instrumented published
	why       string // why nothing did, when nothing did
	stepped   bool   // a step was seen
	from      int64  // the first step the warm-up counts (after a cache fill)
	files     map[string]bool
	disk      diskReads
	// restartMemory restarts the monitor's memory histories (at the
	// measurement's start).
	restartMemory func()

	first    time.Time     // when the first step was seen
	partial  time.Time     // when a run was first seen with some of its ranks not attached
	warm     time.Time     // when the warm-up's steps were done
	begun    bool          // the warm-up is over and settled
	at       time.Time     // when the measurement began
	base     map[int]count // each rank's counts then
	last     *snapshot.Snapshot
	waiting  float64 // summed threads waiting for a CPU, over readings
	pools    map[string]*verdict.PoolLoad
	readings int
	timedOut bool // no first step within StartTimeout
	guard    func(snapshot.Snapshot) string
	refused  string    // what the guard answered
	peakRSS  float64   // the largest RSS of the trainer's tree seen
	rss      []float64 // its RSS over the measurement, every rssPoll
	pids     []int     // the tree's processes at the last snapshot
	notes    []string
	watching sync.WaitGroup // Config.Watch while it runs
}

// run watches the command until its measurement is over, it exits, it
// takes too long to start, or ctx ends.
func (m *meter) run(ctx context.Context, p *child.Process) {
	deadline := time.Now().Add(m.c.StartTimeout)
	stop := make(chan struct{})
	go func() {
		select {
		case <-p.Exited():
		case <-ctx.Done():
		case <-time.After(time.Until(deadline)):
		}
		close(stop)
	}()
	pr := newProbe(p.Pid(), m.c.Env)
	probing, probed := make(chan struct{}), make(chan struct{})
	go pr.run(probing, probed)
	sock, ok := child.AwaitSocket(p.Pid(), stop)
	close(probing)
	<-probed
	if !ok {
		m.timedOut = time.Now().After(deadline)
		m.why = pr.why()
		return
	}
	m.connected = true
	// Aggregates, not a frame per step, read only when a snapshot is
	// taken: at thousands of steps a second, sending and reading each one
	// would take the CPU the phase measures (a phase then measured half
	// its steps/s). The cost: the steps of a loop's last partial second
	// before it stops (on input(), say) are not seen.
	mon, err := monitor.Open(ctx, sock, monitor.Options{Sources: m.c.Sources(), Aggregates: true, Gated: true, Batch: time.Second})
	if err != nil {
		m.notes = append(m.notes, fmt.Sprintf("attach %s: %v", sock, err))
		return
	}
	defer mon.Close()
	m.restartMemory = mon.Snapshotter.RestartMemory
	if m.c.Watch != nil {
		m.watching.Add(1)
		go func() {
			defer m.watching.Done()
			m.c.Watch(ctx, m.name, sock)
		}()
	}
	m.watch(ctx, p, mon, deadline)
}

// watch takes snapshots until the measurement is over or the command
// ends; the last one is kept for the result.
func (m *meter) watch(ctx context.Context, p *child.Process, mon *monitor.Monitor, deadline time.Time) {
	var next time.Time // the measurement's next snapshot; between two, the RSS is read
	for {
		wait := warmPoll
		if m.begun {
			wait = min(rssPoll, time.Until(m.at.Add(m.c.PhaseTime)), time.Until(next))
		}
		select {
		case <-ctx.Done():
			m.take(mon, time.Now())
			return
		case <-p.Exited():
			time.Sleep(exitFrames)
			m.take(mon, time.Now())
			return
		case now := <-time.After(max(wait, time.Millisecond)):
			if m.begun && now.Before(next) && now.Before(m.at.Add(m.c.PhaseTime)) {
				m.sampleRSS()
				continue
			}
			next = now.Add(measurePoll)
			s := m.take(mon, now)
			if m.guard != nil {
				if m.refused = m.guard(s); m.refused != "" {
					return
				}
			}
			if !m.stepped && now.After(deadline) {
				m.timedOut = true
				return
			}
			if m.begun && !now.Before(m.at.Add(m.c.PhaseTime)) {
				return
			}
			m.observe(s, now)
		}
	}
}

// take is a snapshot over the measured window (the phase's time, or all
// steps before the measurement began), kept as the last one.
func (m *meter) take(mon *monitor.Monitor, now time.Time) snapshot.Snapshot {
	w := snapshot.Window{Label: "phase"}
	if m.begun {
		w.Seconds = min(m.c.PhaseTime.Seconds(), now.Sub(m.at).Seconds())
	}
	s := mon.Snapshot(now, w)
	m.last = &s
	m.peakRSS = max(m.peakRSS, TreeRSS(s.Process))
	pids := treePIDs(s.Process)
	m.pids = pids
	if m.name == verdict.PhaseLoader {
		m.files = openFiles(pids, m.files)
	}
	if m.begun {
		m.disk.read(pids)
		if rss := TreeRSS(s.Process); rss > 0 {
			m.rss = append(m.rss, rss)
		}
	}
	return s
}

// sampleRSS adds a reading of the tree's RSS between two snapshots (the
// tree as the last one saw it).
func (m *meter) sampleRSS() {
	if rss := treeRSSNow(m.pids); rss > 0 {
		m.rss = append(m.rss, rss)
	}
}

// rssGrowth is how much the tree's RSS grew over the measurement: the
// largest of its last third of readings less the largest of its first
// third (a step's transient allocations come and go within each third;
// memory that stays grows the later third); 0 with fewer than 3.
func rssGrowth(rss []float64) int64 {
	if len(rss) < 3 {
		return 0
	}
	k := len(rss) / 3
	return int64(slices.Max(rss[len(rss)-k:]) - slices.Max(rss[:k]))
}

// treePIDs are the pids of the trainer's process tree in p.
func treePIDs(p *snapshot.Process) []int {
	if p == nil {
		return nil
	}
	out := []int{p.Self.PID}
	for _, c := range p.Children {
		out = append(out, c.PID)
	}
	return out
}

// TreeRSS is the resident memory of the trainer's process tree in p
// (bytes), 0 without readings.
func TreeRSS(p *snapshot.Process) float64 {
	if p == nil {
		return 0
	}
	var sum float64
	for _, pr := range append([]snapshot.Proc{p.Self}, p.Children...) {
		if v := pr.RSS.Value; v != nil {
			sum += *v
		}
	}
	return sum
}

// observe ends the warm-up when it is over, and adds a measuring
// snapshot's thread readings.
func (m *meter) observe(s snapshot.Snapshot, now time.Time) {
	counts := countsOf(s)
	steps := minSteps(counts)
	if steps < 1 {
		return
	}
	m.stepped = true
	if m.ranksAttaching(s, len(counts), now) {
		return
	}
	if m.first.IsZero() {
		// A cached phase's warm-up counts from the first step on the
		// cache, once it is full and the loader shut down: the fill is
		// the loader's time, not the network's.
		from, ok := cacheReady(m.dir, m.name)
		if !ok || steps < from {
			return
		}
		m.first, m.from = now, from
	}
	if !m.begun {
		// A few steps, or a few seconds for slow steps; a loop that
		// stopped stepping (a script waiting for input) is measured after
		// twice that, so that the phase ends.
		since, n := now.Sub(m.first), steps-m.from+1
		if m.warm.IsZero() && (n >= 1+m.c.WarmupSteps || (n >= 3 && since >= m.c.WarmupTime) || since >= 2*m.c.WarmupTime) {
			m.warm = now
		}
		if !m.warm.IsZero() && now.Sub(m.warm) >= settleTime {
			m.begun, m.at, m.base = true, now, counts
			// The memory rules judge the measured window only: what came
			// before (the start-up, a cache filled) is not the loop's.
			if m.restartMemory != nil {
				m.restartMemory()
			}
			m.disk.read(treePIDs(s.Process))
		}
		return
	}
	m.addThreads(s.Threads)
}

// addThreads adds one reading of the run's threads: how many waited for
// a CPU, and each pool's cores.
func (m *meter) addThreads(t *snapshot.Threads) {
	if t == nil {
		return
	}
	if m.pools == nil {
		m.pools = map[string]*verdict.PoolLoad{}
	}
	m.readings++
	for role, r := range t.ByRole() {
		p := m.pools[role]
		if p == nil {
			p = &verdict.PoolLoad{Role: role}
			m.pools[role] = p
		}
		p.Threads = max(p.Threads, r.Threads)
		p.CPU += r.CPU / 100
		p.Wait += r.Wait / 100
		m.waiting += r.Wait / 100
	}
}

// ranksAttaching reports whether the warm-up waits for a run's ranks:
// fewer of them (attached) than its world size, for less than WarmupTime
// since that was first seen. A rank slow to answer its hello on a loaded
// machine attaches late, and a measurement begun without it has no row
// for it; ranks on other hosts never attach here, and the phase goes on
// with those it has.
func (m *meter) ranksAttaching(s snapshot.Snapshot, attached int, now time.Time) bool {
	if m.begun || s.Trainer == nil || s.Trainer.WorldSize <= attached {
		return false
	}
	if m.partial.IsZero() {
		m.partial = now
	}
	return now.Sub(m.partial) < m.c.WarmupTime
}

// countsOf is each rank's counts in s (rank 0 for a single process).
func countsOf(s snapshot.Snapshot) map[int]count {
	out := map[int]count{}
	if len(s.Ranks) > 0 {
		for _, r := range s.Ranks {
			if r.Totals != nil {
				out[r.Rank] = count{pid: r.PID, steps: r.Totals.Steps, samples: r.Totals.Samples, lastEndNs: r.Totals.LastEndNs}
			}
		}
		return out
	}
	if t := s.Totals; t != nil {
		pid := 0
		if s.Trainer != nil {
			pid = s.Trainer.PID
		}
		out[0] = count{pid: pid, steps: t.Steps, samples: t.Samples, lastEndNs: t.LastEndNs}
	}
	return out
}

// minSteps is the fewest steps any rank has made (0 without any rank).
func minSteps(cs map[int]count) int64 {
	if len(cs) == 0 {
		return 0
	}
	n := int64(math.MaxInt64)
	for _, c := range cs {
		n = min(n, c.steps)
	}
	return n
}

// result fills res from the last snapshot and the counts at the
// measurement's start: each rank's steps and samples over the measured
// window, the job's figures (samples/s summed over ranks), the lowest
// rank's stage shares, loader and the one judge's verdict.
func (m *meter) result(res *verdict.PhaseResult) {
	res.Notes = append(res.Notes, m.notes...)
	s := m.last
	if s == nil || s.Summary == nil {
		return
	}
	if !m.begun {
		res.Notes = append(res.Notes, fmt.Sprintf("the command ended during the warm-up: measured on all %d steps, start-up included", s.Summary.Steps))
	}
	ranks := m.rankFigures(*s)
	if len(ranks) == 0 {
		return
	}
	low := ranks[0]
	res.Steps, res.StepsPerSec, res.Summary = low.Steps, low.StepsPerSec, low.Summary
	res.Seconds = seconds(low)
	for _, r := range ranks {
		res.SamplesPerSec += r.SamplesPerSec
	}
	if low.Steps > 0 && low.StepsPerSec > 0 {
		res.Batch = int(math.Round(low.SamplesPerSec / low.StepsPerSec))
	}
	res.Loader, res.Verdict = s.Loader, s.Verdict
	if len(ranks) > 1 {
		res.Ranks = ranks
		if slow, _, ok := res.Straggler(); ok {
			res.StragglerRank = &slow.Rank
		}
	}
	res.PeakRSS = int64(m.peakRSS)
	res.RSSGrowth = rssGrowth(m.rss)
	if m.begun && res.Seconds > 0 {
		res.DiskReadPerSec = float64(m.disk.total()) / res.Seconds
	}
	m.threadFigures(res)
}

// seconds is the time a rank's measured steps took.
func seconds(r verdict.RankPhase) float64 {
	if r.StepsPerSec <= 0 {
		return 0
	}
	return float64(r.Steps) / r.StepsPerSec
}

// rankFigures are each rank's figures over the measured window, lowest
// rank first.
func (m *meter) rankFigures(s snapshot.Snapshot) []verdict.RankPhase {
	counts := countsOf(s)
	var out []verdict.RankPhase
	for rank, c := range counts {
		r := verdict.RankPhase{Rank: rank, PID: c.pid}
		sum, v := rankSummary(s, rank)
		if sum == nil {
			continue
		}
		r.Summary, r.Verdict = *sum, v
		b, ok := m.base[rank]
		if m.begun && ok && c.lastEndNs > b.lastEndNs {
			dt := float64(c.lastEndNs-b.lastEndNs) / 1e9
			r.Steps = c.steps - b.steps
			r.StepsPerSec, r.SamplesPerSec = float64(r.Steps)/dt, float64(c.samples-b.samples)/dt
		} else {
			r.Steps = int64(sum.Steps)
			r.StepsPerSec, r.SamplesPerSec = sum.StepsPerSec, sum.SamplesPerSec
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// rankSummary is a rank's window summary and verdict in s.
func rankSummary(s snapshot.Snapshot, rank int) (*stage.Summary, *verdict.Verdict) {
	if len(s.Ranks) == 0 {
		return s.Summary, s.Verdict
	}
	for _, r := range s.Ranks {
		if r.Rank == rank {
			return r.Summary, r.Verdict
		}
	}
	return nil, nil
}

// threadFigures adds the mean thread readings of the measurement.
func (m *meter) threadFigures(res *verdict.PhaseResult) {
	if m.readings == 0 {
		return
	}
	n := float64(m.readings)
	w := m.waiting / n
	res.Waiting = &w
	for _, p := range m.pools {
		res.Pools = append(res.Pools, verdict.PoolLoad{Role: p.Role, Threads: p.Threads, CPU: p.CPU / n, Wait: p.Wait / n})
		res.CPUCores += p.CPU / n
	}
	sort.Slice(res.Pools, func(i, j int) bool { return res.Pools[i].Role < res.Pools[j].Role })
}
