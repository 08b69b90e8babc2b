// Package replay plays a recording back through the same feed and
// snapshotter as a live trainer, so that the screen, --once and --json show a
// recorded run as it was at any moment: the verdict included.
package replay

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor"
	"github.com/pipetop/pipetop/monitor/feed"
	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources"
)

// Speeds are the replay speeds, slowest first.
var Speeds = []float64{1, 2, 4, 8, 16, 32, 64}

// Player is a recording loaded for replay, with a clock that runs at a
// chosen speed. It is safe for concurrent use.
type Player struct {
	Header recording.Header
	// Damage is why the recording stops early, nil for a whole one.
	Damage error

	mu      sync.Mutex
	file    string
	entries []recording.Entry
	start   time.Time      // the first entry's time (or the header's start)
	end     time.Time      // the last entry's time
	feed    *feed.Feed     // a single-process trainer's messages
	ranks   *monitor.Group // a run's, rank by rank; nil when none are recorded
	col     *monitor.Snapshotter
	host    *hostSource
	next    int       // entries applied
	at      time.Time // the replay position
	speed   int       // index in Speeds
	paused  bool
	view    string
	wall    time.Time // wall time when the position was last set
}

// Load reads the recording at path. A damaged recording loads up to the
// damage; Damage says where.
func Load(path string) (*Player, error) {
	h, es, err := recording.ReadAll(path)
	if es == nil && err != nil {
		return nil, err
	}
	p := &Player{Header: h, Damage: err, file: path, entries: es, start: time.Unix(0, h.StartNs)}
	if len(es) > 0 {
		p.start, p.end = es[0].T, es[len(es)-1].T
	}
	if p.end.Before(p.start) {
		p.end = p.start
	}
	p.feed = feed.New(0)
	p.host = &hostSource{p: p}
	p.col = monitor.NewSnapshotter(p.feed, p.host)
	if slices.ContainsFunc(es, func(e recording.Entry) bool { return e.Rank != nil }) {
		p.ranks = monitor.NewReplay()
		p.col.Group = p.ranks
	}
	p.at, p.wall = p.start, time.Now()
	return p, nil
}

// reset starts the feed afresh before the first entry.
func (p *Player) reset() {
	p.feed.Reset()
	if p.ranks != nil {
		p.ranks.Reset()
	}
	p.host.set(nil)
	p.next = 0
}

// Start and End are the times of the first and last entries.
func (p *Player) Start() time.Time { return p.start }

// End is the time of the last entry.
func (p *Player) End() time.Time { return p.end }

// Length is the recording's length.
func (p *Player) Length() time.Duration { return p.end.Sub(p.start) }

// Snapshotter is the snapshotter over the replayed feed, for the screen: its
// snapshots carry the replay state.
func (p *Player) Snapshotter() *monitor.Snapshotter { return p.col }

// Now is the replay clock: the position, moving at the chosen speed unless
// paused. It applies the entries up to it.
func (p *Player) Now() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tick()
	p.advance()
	return p.at
}

// tick moves the position by the wall time since the last tick, at speed.
func (p *Player) tick() {
	if !p.paused {
		now := time.Now()
		p.at = p.at.Add(time.Duration(float64(now.Sub(p.wall)) * Speeds[p.speed]))
		p.wall = now
		if p.at.After(p.end) {
			p.at = p.end
		}
	}
}

// SeekTo moves the position to t (clamped to the recording).
func (p *Player) SeekTo(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seekLocked(t)
}

// SeekStart moves the position to the start.
func (p *Player) SeekStart() { p.SeekTo(p.start) }

// SeekEnd moves the position to the end.
func (p *Player) SeekEnd() { p.SeekTo(p.end) }

// Seek moves the position by d.
func (p *Player) Seek(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seekLocked(p.at.Add(d))
}

func (p *Player) seekLocked(t time.Time) {
	t = clamp(t, p.start, p.end)
	if t.Before(p.at) {
		p.reset() // the feed cannot go back: replay from the start
	}
	p.at, p.wall = t, time.Now()
	p.advance()
}

func clamp(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

// advance applies every entry up to the position.
func (p *Player) advance() {
	for p.next < len(p.entries) && !p.entries[p.next].T.After(p.at) {
		e := p.entries[p.next]
		p.next++
		if e.Host != nil {
			p.host.set(e.Host)
			continue
		}
		msg, ok := monitor.Messages(e)
		switch {
		case ok && e.Rank != nil && p.ranks != nil:
			p.ranks.Apply(*e.Rank, msg, e.T)
		case ok:
			p.feed.Apply(msg, e.T)
		}
	}
}

// SetSpeed moves the speed step places through Speeds.
func (p *Player) SetSpeed(step int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tick()
	p.speed = max(0, min(len(Speeds)-1, p.speed+step))
}

// SetPaused stops or restarts the clock.
func (p *Player) SetPaused(paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tick()
	p.paused = paused
	p.wall = time.Now()
}

// SpeedIndex is the step of SetSpeed from the slowest speed to speed
// (1, 2, 4, ... 64); ok is false for a speed not in Speeds.
func SpeedIndex(speed int) (step int, ok bool) {
	for i, s := range Speeds {
		if float64(speed) == s {
			return i, true
		}
	}
	return 0, false
}

// WholeRun is the view of a snapshot of the whole run (Place).
const WholeRun = "the whole run (its end, all steps; --at D: one instant)"

// Place seeks to at: from the start, from the end when negative or for
// the whole run (whole: at the end, the view named WholeRun).
func (p *Player) Place(at time.Duration, whole bool) {
	start := p.Start().Add(at)
	if at < 0 || whole {
		start = p.End().Add(at)
	}
	if whole {
		p.SetView(WholeRun)
	}
	p.SeekTo(start)
}

// SetView names what the snapshots show (snapshot.Replay.View).
func (p *Player) SetView(view string) {
	p.mu.Lock()
	p.view = view
	p.mu.Unlock()
}

// Snapshot collects the snapshot at the position over window w, the
// replay state included.
func (p *Player) Snapshot(w snapshot.Window) snapshot.Snapshot {
	return p.col.Snapshot(p.Now(), w)
}

// fill sets s.Replay from the player's state.
func (p *Player) fill(s *snapshot.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &snapshot.Replay{File: filepath.Base(p.file), AtSec: p.at.Sub(p.start).Seconds(),
		LengthSec: p.end.Sub(p.start).Seconds(), Speed: Speeds[p.speed], Paused: p.paused, View: p.view}
	if p.Damage != nil {
		r.Damage = p.Damage.Error()
	}
	s.Replay = r
}

// hostSource is the source that replays recorded host readings (every
// recorded source's part, through monitor.LoadReadings) and marks the
// snapshot as a replay. It keeps nothing of its own in recordings.
type hostSource struct {
	p  *Player
	mu sync.Mutex
	h  recording.Host
}

func (h *hostSource) set(r recording.Host) {
	h.mu.Lock()
	h.h = r
	h.mu.Unlock()
}

func (h *hostSource) Name() string                                     { return "replay" }
func (h *hostSource) Save(*snapshot.Snapshot) (json.RawMessage, error) { return nil, nil }
func (h *hostSource) Load(*snapshot.Snapshot, json.RawMessage) error   { return nil }
func (h *hostSource) Sample(time.Time, source.Target) error            { return nil }
func (h *hostSource) Close() error                                     { return nil }

// FillHost implements source.HostFiller: the host readings of every
// recorded part that has some, as the live sources give them.
func (h *hostSource) FillHost(s *snapshot.Snapshot, hr *verdict.Host) {
	for _, p := range sources.Parts() {
		if hf, ok := p.(source.HostFiller); ok {
			hf.FillHost(s, hr)
		}
	}
}

// Fill sets the recorded host readings of the latest refresh at or before
// the position; a part that does not decode is named as damage.
func (h *hostSource) Fill(s *snapshot.Snapshot) {
	h.p.fill(s)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h == nil {
		s.GPU.Status = "no host readings recorded yet"
		return
	}
	if err := monitor.LoadReadings(h.h, s, sources.Parts()); err != nil && s.Replay.Damage == "" {
		s.Replay.Damage = err.Error()
	}
}
