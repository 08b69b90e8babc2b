package monitor

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/monitor/feed"
)

// ScanInterval is how often a Group looks for new, restarted or relaunched
// ranks in the socket directory.
const ScanInterval = time.Second

// A socket that did not answer is asked again for its hello firstReprobe
// later, then twice as long after each silence, at most reprobe. A socket
// is seen the moment its trainer binds it, before it listens: the first
// try may come too early.
const (
	firstReprobe = 100 * time.Millisecond
	reprobe      = 5 * time.Second
)

// Group is the trainer link to every rank of one run: one feed.Feed per
// rank, each re-resolved to that rank's socket on reconnection, so a
// restarted rank (new pid, new socket) is found again. A relaunch of the
// whole run (a new run id under the same trainer name) is followed too.
// It is safe for concurrent use.
type Group struct {
	dir  string
	name string // the trainer name the run's sockets carry

	mu    sync.Mutex
	run   string
	seen  map[string]probe     // by socket path: what each socket said
	eps   map[int]ipc.Endpoint // the live socket of each rank of run
	feeds map[int]*feed.Feed   // one per rank ever seen
	world int                  // the largest world size a rank announced
	ctx   context.Context
	view  ipc.ViewOptions // what each rank's feed asks of its trainer
	tap   Tap             // sees every rank's messages (recordings); may be nil
	// brief: a rank attached above the lowest one seen gets a brief feed
	// (feed.NewBrief), for a view that shows only the lowest in full.
	brief bool
	// dirTime is the socket directory's modification time at the last
	// scan: the directory changes when a socket comes or goes.
	dirTime time.Time
	full    time.Time // when the directory was last read
}

// Tap sees a message that the feed of rank is about to apply.
type Tap func(rank int, m ipc.Message, now time.Time)

// probe is what one socket said when asked for its hello.
type probe struct {
	ep    ipc.Endpoint
	hello *ipc.Hello // nil when it did not answer
	at    time.Time
	wait  time.Duration // when it did not answer: how long after at it is asked again
}

// due reports whether the socket is to be asked (again) at now.
func (p probe) due(now time.Time) bool { return p.hello == nil && !now.Before(p.at.Add(p.wait)) }

// RankFeed is the feed of one rank.
type RankFeed struct {
	Rank int
	Feed *feed.Feed
}

// newGroup returns a Group for run, whose sockets are named name.PID.sock
// in dir. Nothing is attached before start.
func newGroup(dir, name, run string) *Group {
	return &Group{dir: dir, name: name, run: run, seen: map[string]probe{}, eps: map[int]ipc.Endpoint{}, feeds: map[int]*feed.Feed{}}
}

// start scans once, attaches a feed to every rank found, and scans again
// until ctx ends: when a socket comes or goes in the directory (watchDir)
// and when a socket that did not answer is due to be asked again, or
// every ScanInterval where the directory cannot be watched.
func (g *Group) start(ctx context.Context, view ipc.ViewOptions) {
	g.mu.Lock()
	g.ctx, g.view = ctx, view
	g.mu.Unlock()
	changed, err := watchDir(ctx, g.dir)
	if err != nil {
		changed = nil // look every ScanInterval
	}
	g.scan(ctx, time.Now())
	go func() {
		t := time.NewTimer(g.nextScan(changed != nil))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-changed:
				if !ok {
					changed = nil // the directory went: look on our own
				}
				g.read(ctx, time.Now())
			case <-t.C:
				g.scan(ctx, time.Now())
			}
			t.Reset(g.nextScan(changed != nil))
		}
	}()
}

// nextScan is how long a group waits for its next scan: ScanInterval when
// it cannot watch its directory; when it can, until the first socket that
// did not answer is due to be asked again (a long time when none).
func (g *Group) nextScan(watched bool) time.Duration {
	if !watched {
		return ScanInterval
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	wait := time.Duration(math.MaxInt64)
	for _, p := range g.seen {
		if p.hello == nil {
			wait = min(wait, max(0, time.Until(p.at.Add(p.wait))))
		}
	}
	return wait
}

// Run is the identifier of the run the group follows.
func (g *Group) Run() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.run
}

// WorldSize is the largest world size a rank of the run announced.
func (g *Group) WorldSize() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.world
}

// Feeds returns the feed of every rank seen so far, by rank.
func (g *Group) Feeds() []RankFeed {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]RankFeed, 0, len(g.feeds))
	for r, f := range g.feeds {
		out = append(out, RankFeed{r, f})
	}
	slices.SortFunc(out, func(a, b RankFeed) int { return cmp.Compare(a.Rank, b.Rank) })
	return out
}

// close stops every rank's feed.
func (g *Group) close() {
	for _, rf := range g.Feeds() {
		rf.Feed.Close()
	}
}

// scan reads the socket directory, asks new sockets for their hello, and
// attaches a feed to every rank of the run not yet watched. Sockets whose
// hello is known are not dialled again: the feeds notice a rank going away.
func (g *Group) scan(ctx context.Context, now time.Time) {
	if g.unchanged(now) {
		return
	}
	g.read(ctx, now)
}

// read is scan without the look at the directory's time: the directory
// changed.
func (g *Group) read(ctx context.Context, now time.Time) {
	paths := socketsIn(g.dir)
	g.mu.Lock()
	var ask []ipc.Endpoint
	for path, ep := range paths {
		if p, ok := g.seen[path]; !ok || p.due(now) {
			ask = append(ask, ep)
		}
	}
	for path := range g.seen {
		if _, ok := paths[path]; !ok {
			delete(g.seen, path)
		}
	}
	g.mu.Unlock()
	for _, ep := range ask { // dial without the lock: a slow socket must not stall Feeds
		h, _ := Hello(ctx, ep.Path)
		g.mu.Lock()
		p := probe{ep: ep, hello: h, at: now, wait: firstReprobe}
		if old, ok := g.seen[ep.Path]; ok && h == nil {
			p.wait = min(2*old.wait, reprobe)
		}
		g.seen[ep.Path] = p
		g.mu.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.follow()
	g.eps = g.members()
	// In rank order: the lowest rank is attached first, in full.
	for _, r := range slices.Sorted(maps.Keys(g.eps)) {
		if _, ok := g.feeds[r]; !ok {
			g.attach(r)
		}
	}
}

// unchanged reports whether a scan at now would find what the last one
// found: the directory was not modified since (no socket came or went),
// no socket waits to be asked again, and the last full read is younger
// than fullScan. A viewer of 64 ranks read and parsed 64 names a second
// for nothing; a stat is one system call. It records the directory's
// time when a scan is due.
func (g *Group) unchanged(now time.Time) bool {
	st, err := os.Stat(g.dir)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		return false
	}
	// A time is trusted once a second old: the kernel stamps directories
	// with a coarse clock, and a socket made in the same tick as the last
	// change, after the last read, leaves the time as it was.
	t := st.ModTime()
	same := t.Equal(g.dirTime) && now.Sub(t) > time.Second && now.Sub(g.full) < fullScan
	for _, p := range g.seen {
		same = same && p.hello != nil
	}
	if !same {
		g.dirTime, g.full = st.ModTime(), now
	}
	return same
}

// fullScan is how often a Group reads its directory even when it seems
// unchanged (a file system with coarse modification times).
const fullScan = 10 * time.Second

// follow switches to the newest run under the group's trainer name when no
// socket of the current run is left (the run was launched again).
func (g *Group) follow() {
	var newest probe
	for _, p := range g.seen {
		if p.hello == nil || p.hello.Rank == nil || p.hello.Run == "" {
			continue
		}
		if p.hello.Run == g.run {
			return
		}
		if BaseName(p.ep.Name) == BaseName(g.name) && p.ep.PID > newest.ep.PID {
			newest = p
		}
	}
	if newest.hello != nil {
		g.run = newest.hello.Run
	}
}

// members maps each rank of the run to its newest socket.
func (g *Group) members() map[int]ipc.Endpoint {
	eps := map[int]ipc.Endpoint{}
	for _, p := range g.seen {
		h := p.hello
		if h == nil || h.Rank == nil || h.Run != g.run {
			continue
		}
		if old, ok := eps[*h.Rank]; !ok || p.ep.PID > old.PID {
			eps[*h.Rank] = p.ep
		}
		g.world = max(g.world, h.WorldSize)
	}
	return eps
}

// NewReplay returns a Group that attaches to nothing: the messages of a
// recorded run are put into it with Apply, each rank's into its own feed.
func NewReplay() *Group { return newGroup("", "", "") }

// Apply applies a message recorded from rank r, making that rank's feed
// when it is new. A hello sets the run and its world size.
func (g *Group) Apply(r int, m ipc.Message, now time.Time) {
	g.mu.Lock()
	if h := m.Connected; h != nil {
		g.run = h.Run
		g.world = max(g.world, h.WorldSize)
	}
	f, ok := g.feeds[r]
	if !ok {
		f = feed.New(g.capacity())
		g.feeds[r] = f
	}
	g.mu.Unlock()
	f.Apply(m, now)
}

// Reset forgets every rank of a replayed run (a replay going back to its
// start).
func (g *Group) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.feeds, g.world, g.run = map[int]*feed.Feed{}, 0, ""
}

// SetTap makes fn see every message each rank's feed applies from now on,
// ranks found later included; nil stops it. As with feed.Feed.SetTap, fn
// runs with that feed locked and must be quick.
func (g *Group) SetTap(fn Tap) {
	g.mu.Lock()
	g.tap = fn
	feeds := maps.Clone(g.feeds)
	g.mu.Unlock()
	for r, f := range feeds {
		tapFeed(f, r, fn)
	}
}

// tapFeed passes the messages of rank r's feed f to fn (none when nil).
func tapFeed(f *feed.Feed, r int, fn Tap) {
	if fn == nil {
		f.SetTap(nil)
		return
	}
	f.SetTap(func(m ipc.Message, now time.Time) { fn(r, m, now) })
}

// capacity is how many steps each rank's feed keeps: the ranks of a large
// run share the memory of one feed, down to 4,096 steps each.
func (g *Group) capacity() int {
	if g.world > 1 {
		return max(1<<12, feed.DefaultCapacity/g.world)
	}
	return feed.DefaultCapacity
}

// attach starts the feed of rank r: a brief one when the group attaches
// in brief and a lower rank has a feed (a rank below every other one is
// the one a view shows in full; one that comes later than a higher one
// is attached in full too).
func (g *Group) attach(r int) {
	f, view := feed.New(g.capacity()), g.view
	if g.brief && len(g.feeds) > 0 && r > slices.Min(slices.Collect(maps.Keys(g.feeds))) {
		// A rank shown in brief: its aggregates are asked for in brief too.
		f, view.BriefAggregates = feed.NewBrief(g.capacity()), true
	}
	f.SetView(view)
	if g.tap != nil {
		tapFeed(f, r, g.tap)
	}
	g.feeds[r] = f
	f.AttachResolver(g.ctx, fmt.Sprintf("rank %d of run %s", r, g.run), func() (ipc.Endpoint, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if ep, ok := g.eps[r]; ok {
			return ep, nil
		}
		return ipc.Endpoint{}, fmt.Errorf("no live socket for rank %d of run %s in %s", r, g.run, g.dir)
	})
}

// socketsIn lists the trainer sockets in dir by path, without dialling
// them (ipc.List checks each one's liveness by connecting).
func socketsIn(dir string) map[string]ipc.Endpoint {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make(map[string]ipc.Endpoint, len(entries))
	for _, e := range entries {
		name, pid, ok := ipc.ParseSocketName(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		out[path] = ipc.Endpoint{Path: path, Name: name, PID: pid}
	}
	return out
}

// Hello connects to the trainer socket at path, reads its hello and hangs
// up; nil and the error when it does not answer within a second.
func Hello(ctx context.Context, path string) (*ipc.Hello, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, path)
	if err != nil {
		return nil, err
	}
	h := c.Hello()
	c.Close()
	return &h, nil
}

// RunOf is the run a hello belongs to: its run identifier when it names a
// rank of one, else "" (a single-process trainer).
func RunOf(h *ipc.Hello) string {
	if h == nil || h.Rank == nil {
		return ""
	}
	return h.Run
}

// Listed is one live trainer socket, whether pipetop could talk to it,
// and the run its hello says it is a rank of.
type Listed struct {
	ipc.Endpoint
	OK        bool   `json:"ok"`              // it answered with a hello pipetop understands
	Error     string `json:"error,omitempty"` // why not: the socket, the problem, what to do
	Run       string `json:"run,omitempty"`
	Rank      *int   `json:"rank,omitempty"`
	WorldSize int    `json:"world_size,omitempty"`
}

// List returns the live trainers, each asked for its hello (all at once,
// each for at most timeout), with the ranks of each run together, by run
// and rank, and single-process trainers after them in ipc.List order.
func List(ctx context.Context, timeout time.Duration) ([]Listed, error) {
	eps, err := ipc.List()
	if err != nil {
		return nil, err
	}
	out := make([]Listed, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			out[i] = Listed{Endpoint: ep, OK: true}
			h, err := ipc.ProbeHello(ctx, ep.Path, timeout)
			if err != nil {
				out[i].OK, out[i].Error = false, err.Error()
				return
			}
			if RunOf(&h) != "" {
				out[i].Run, out[i].Rank, out[i].WorldSize = h.Run, h.Rank, h.WorldSize
			}
		})
	}
	wg.Wait()
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case (a.Run == "") != (b.Run == ""):
			return a.Run != ""
		case a.Run != b.Run:
			return a.Run < b.Run
		case a.Run == "":
			return false
		}
		return *a.Rank < *b.Rank
	})
	return out, nil
}

// WriteList writes the live trainers of List as a table, the ranks of each
// run together, marking those pipetop cannot attach; dir is the socket
// directory, named when it holds none.
func WriteList(w io.Writer, entries []Listed, dir string) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintf(w, "no live trainer in %s\n", dir)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPID\tRUN\tRANK\tSOCKET\tSTATUS")
	for _, e := range entries {
		status, run, rank := "ok", "-", "-"
		if !e.OK {
			status = "✗ cannot attach: " + e.Error
		}
		if e.Run != "" {
			run, rank = e.Run, fmt.Sprintf("%d/%d", *e.Rank, e.WorldSize)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.Name, e.PID, run, rank, e.Path, status)
	}
	return tw.Flush()
}
