// Command synthetic is a SYNTHETIC publisher: it trains nothing. It
// publishes made-up step records with configurable stage durations at a
// configurable rate, for testing and benchmarking the protocol and pipetop.
// It announces itself with kind "synthetic" in its hello config.
//
// Planted mode (-paced, implied by -start-delay, -hang-after, -every,
// -drift-after and -leak-mb-per-sec) sleeps through every stage, so step
// times, progress frames and stalls are real: tests/diagnosis plants
// bottlenecks with it.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "synthetic:", err)
		os.Exit(1)
	}
}

type options struct {
	name   string
	rate   float64
	steps  int64
	batch  int
	jitter float64
	cpu    map[string]time.Duration
	gpu    map[string]time.Duration
	names  []string
	quiet  bool
	// threads is how many extra OS threads to keep (idlers).
	threads int
	loader  bool
	socket  string
	rank    int // -1: single process
	world   int
	run     string
	// Multi-rank simulation: ranks sockets NAME-rankR; rank straggler (-1:
	// none) spends straggle more in data_wait each step, and every rank
	// waits in comm (base comm plus its gap to the slowest rank).
	ranks     int
	straggler int
	straggle  time.Duration
	comm      time.Duration
	// A step change in the unpaced mode (ranks too): after changeAfter,
	// data_wait takes change.
	changeAfter, change time.Duration
	// the made-up loader statistics
	loaderWorkers         int
	loaderBusy, loaderAmp float64
	plant                 plant
}

func parse(args []string) (options, error) {
	fs := flag.NewFlagSet("synthetic", flag.ContinueOnError)
	o := options{}
	fs.StringVar(&o.name, "name", "synthetic", "trainer name (the socket is NAME.PID.sock)")
	fs.Float64Var(&o.rate, "rate", 100, "steps per second to publish")
	fs.Int64Var(&o.steps, "steps", 0, "stop after this many steps (0: run until interrupted)")
	fs.IntVar(&o.batch, "batch", 64, "samples per step")
	fs.Float64Var(&o.jitter, "jitter", 0.1, "relative random jitter of each stage duration")
	stages := fs.String("stages", "data_wait=6ms,h2d=0.5ms,forward=2ms,backward=1ms,optim=0.4ms,sync=0.1ms",
		"comma-separated STAGE=DURATION of CPU time per step, in order; other gets the rest")
	gpu := fs.String("gpu", "", "comma-separated STAGE=DURATION of GPU time per step (empty: no GPU times)")
	fs.BoolVar(&o.loader, "loader", true, "also publish made-up loader statistics once a second")
	fs.IntVar(&o.loaderWorkers, "loader-workers", 2, "the made-up loader's worker count")
	fs.Float64Var(&o.loaderBusy, "loader-busy", 0.5, "the made-up loader's worker busy share (0..1)")
	fs.Float64Var(&o.loaderAmp, "loader-amp", 1.2, "the made-up loader's read amplification")
	fs.StringVar(&o.socket, "socket", "", "exact socket path (default: the pipetop socket directory)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not print the socket path(s)")
	fs.IntVar(&o.threads, "threads", 0, "also start this many OS threads that wake every 100 ms (a compute pool's idle threads)")
	fs.IntVar(&o.rank, "rank", -1, "rank to announce in the hello (-1: a single-process trainer)")
	fs.IntVar(&o.world, "world-size", 0, "world size to announce in the hello (0: none)")
	fs.StringVar(&o.run, "run", "", "run identifier to announce in the hello (with -ranks: default synthetic-PID)")
	fs.IntVar(&o.ranks, "ranks", 1, "simulate this many ranks of one run, one socket each (NAME-rankR.PID.sock); adds a comm stage")
	fs.IntVar(&o.straggler, "straggler", -1, "with -ranks: this rank is the planted straggler (-1: none)")
	fs.DurationVar(&o.straggle, "straggle", 8*time.Millisecond, "with -straggler: extra data_wait of the straggler per step; the other ranks wait that long in comm")
	fs.DurationVar(&o.comm, "comm", 300*time.Microsecond, "with -ranks: the all-reduce's own time per step")
	fs.DurationVar(&o.changeAfter, "change-after", 0, "unpaced (with -ranks too): after this long, data_wait takes -change per step (0: never)")
	fs.DurationVar(&o.change, "change", 0, "the data_wait of every step after -change-after")
	plantFlags(fs, &o.plant)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: synthetic [flags]\n\nPublishes SYNTHETIC step records (no training) for testing pipetop.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.rate <= 0 || math.IsInf(o.rate, 0) {
		return o, fmt.Errorf("-rate %v: want a positive number", o.rate)
	}
	var err error
	if o.names, o.cpu, err = parseDurations(*stages); err != nil {
		return o, fmt.Errorf("-stages: %w", err)
	}
	if _, o.gpu, err = parseDurations(*gpu); err != nil {
		return o, fmt.Errorf("-gpu: %w", err)
	}
	for name := range o.gpu {
		if _, ok := o.cpu[name]; !ok {
			return o, fmt.Errorf("-gpu: stage %q is not in -stages", name)
		}
	}
	if err := o.plant.check(o.cpu); err != nil {
		return o, err
	}
	if _, ok := o.cpu[stage.DataWait]; o.changeAfter > 0 && (!ok || o.plant.paced) {
		return o, fmt.Errorf("-change-after: wants a %s stage and the unpaced mode", stage.DataWait)
	}
	if o.plant.paced && o.ranks > 1 {
		return o, fmt.Errorf("planted mode runs one rank; leave out -ranks")
	}
	return o, o.checkRanks()
}

// checkRanks validates the multi-rank flags and puts comm into the stage
// list (after backward, or before optim, sync and other) when ranks > 1.
func (o *options) checkRanks() error {
	if o.ranks < 1 || o.ranks > 4096 {
		return fmt.Errorf("-ranks %d: want 1..4096", o.ranks)
	}
	if o.ranks > 1 && (o.rank >= 0 || o.world > 0) {
		return fmt.Errorf("-ranks %d sets every rank and the world size; leave out -rank and -world-size", o.ranks)
	}
	if o.straggler < -1 || o.straggler >= o.ranks {
		return fmt.Errorf("-straggler %d: want -1 (none) or a rank in 0..%d", o.straggler, o.ranks-1)
	}
	if o.straggler >= 0 {
		if _, ok := o.cpu[stage.DataWait]; !ok {
			return fmt.Errorf("-straggler: the stage list has no %s to slow down", stage.DataWait)
		}
	}
	if o.ranks == 1 || slices.Contains(o.names, stage.Comm) {
		return nil
	}
	at := len(o.names)
	for i, n := range o.names {
		if n == stage.Backward {
			at = i + 1
			break
		}
		if n == stage.Optim || n == stage.Sync || n == stage.Other {
			at = i
			break
		}
	}
	o.names = slices.Insert(o.names, at, stage.Comm)
	o.cpu[stage.Comm] = 0 // filled per step
	return nil
}

func parseDurations(s string) ([]string, map[string]time.Duration, error) {
	m := map[string]time.Duration{}
	var names []string
	if strings.TrimSpace(s) == "" {
		return nil, m, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, nil, fmt.Errorf("%q: want STAGE=DURATION", part)
		}
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return nil, nil, fmt.Errorf("stage %s: bad duration %q", name, val)
		}
		if _, dup := m[name]; dup {
			return nil, nil, fmt.Errorf("stage %s given twice", name)
		}
		m[name] = d
		names = append(names, name)
	}
	return names, m, nil
}

func run(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	timer, err := stage.NewTimer(o.names)
	if err != nil {
		return err
	}
	srvs, err := listen(o, timer.Names())
	for _, srv := range srvs {
		defer srv.Close()
	}
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	idlers(o.threads)
	p := newPublisher(o, timer.Names())
	if o.plant.paced {
		return runPaced(o, p, srvs[0], sig)
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
	defer tick.Stop()
	lastLoader := time.Now()
	for step := int64(0); o.steps == 0 || step < o.steps; step++ {
		select {
		case <-sig:
			return nil
		case now := <-tick.C:
			recs := p.ranks(step, now)
			for i, srv := range srvs {
				srv.Publish(&recs[i])
			}
			if o.loader && now.Sub(lastLoader) >= time.Second {
				ls := p.loaderStats(now, lastLoader)
				for _, srv := range srvs {
					srv.PublishLoader(ls)
				}
				lastLoader = now
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // let the last frames go out
	return nil
}

// listen opens one socket per simulated rank (one in all without -ranks)
// and prints their paths.
func listen(o options, names []string) ([]*ipc.Server, error) {
	run := o.run
	if run == "" && o.ranks > 1 {
		run = fmt.Sprintf("synthetic-%d", os.Getpid())
	}
	var srvs []*ipc.Server
	for r := range o.ranks {
		hello := ipc.Hello{Stages: names, Config: ipc.EncodeConfig(map[string]any{
			"kind": "synthetic", "rate": o.rate, "batch": o.batch, "stages": o.names}),
			WorldSize: o.world, Run: run}
		if o.rank >= 0 {
			hello.Rank = &o.rank
		}
		name, path := o.name, o.socket
		if o.ranks > 1 {
			rank := r
			hello.Rank, hello.WorldSize = &rank, o.ranks
			name = fmt.Sprintf("%s-rank%d", o.name, r)
			if path != "" {
				path = fmt.Sprintf("%s-rank%d", o.socket, r)
			}
		}
		srv, err := ipc.Listen(name, hello, ipc.ServerOptions{Path: path})
		if err != nil {
			return srvs, fmt.Errorf("rank %d: %w", r, err)
		}
		srvs = append(srvs, srv)
		if !o.quiet {
			fmt.Println(srv.Path())
		}
	}
	return srvs, nil
}

// publisher makes the synthetic records.
type publisher struct {
	o       options
	names   []string
	rng     *rand.Rand
	samples int64
	start   time.Time // when it started, for -change-after
}

func newPublisher(o options, names []string) *publisher {
	return &publisher{o: o, names: names, rng: rand.New(rand.NewPCG(1, 2)), start: time.Now()}
}

func (p *publisher) jitter(d time.Duration) int64 {
	f := 1 + p.o.jitter*(2*p.rng.Float64()-1)
	return int64(float64(d) * f)
}

func (p *publisher) record(step int64, now time.Time) stage.Record {
	r := stage.Record{Step: step, NumStages: len(p.names), Samples: int32(p.o.batch)}
	r.ClearGPU()
	var wall int64
	changed := p.o.changeAfter > 0 && now.Sub(p.start) >= p.o.changeAfter
	for i, name := range p.names {
		if d, ok := p.o.cpu[name]; ok {
			if changed && name == stage.DataWait {
				d = p.o.change
			}
			r.CPU[i] = p.jitter(d)
			wall += r.CPU[i]
		}
		if d, ok := p.o.gpu[name]; ok {
			r.GPU[i] = p.jitter(d)
		} else if len(p.o.gpu) > 0 {
			r.GPU[i] = 0
		}
	}
	wall += wall / 50 // 2 % untimed, reported as other
	for i, name := range p.names {
		if name == stage.Other {
			r.CPU[i] = wall / 51
		}
	}
	r.EndNs = now.UnixNano()
	r.StartNs = r.EndNs - wall
	r.HasLoss, r.Loss = true, float32(1/(1+float64(step)/500))
	p.samples += int64(p.o.batch)
	return r
}

// ranks makes one step's records for every simulated rank. Every rank
// runs the same step from the same start: its stages are jittered on
// their own, the straggler's data_wait is longer, and each rank's comm is
// the all-reduce's own time plus its wait for the slowest rank, so all
// ranks end the step together.
func (p *publisher) ranks(step int64, now time.Time) []stage.Record {
	if p.o.ranks == 1 {
		return []stage.Record{p.record(step, now)}
	}
	comm, wait := slices.Index(p.names, stage.Comm), slices.Index(p.names, stage.DataWait)
	other := slices.Index(p.names, stage.Other)
	recs := make([]stage.Record, p.o.ranks)
	busy := make([]int64, p.o.ranks)
	var slowest int64
	for r := range recs {
		recs[r] = p.record(step, now)
		rec := &recs[r]
		if r == p.o.straggler {
			rec.CPU[wait] += int64(p.o.straggle)
		}
		for i := range rec.NumStages {
			if i != comm && i != other {
				busy[r] += rec.CPU[i]
			}
		}
		slowest = max(slowest, busy[r])
	}
	for r := range recs {
		rec := &recs[r]
		rec.CPU[comm] = int64(p.o.comm) + slowest - busy[r]
		wall := slowest + int64(p.o.comm)
		if other >= 0 {
			rec.CPU[other] = wall / 50
			wall += rec.CPU[other]
		}
		rec.StartNs = rec.EndNs - wall
	}
	p.samples -= int64(p.o.ranks-1) * int64(p.o.batch) // loader stats are per rank
	return recs
}

func (p *publisher) loaderStats(now, last time.Time) stage.LoaderStats {
	sec := now.Sub(last).Seconds()
	rate := float64(p.samples) / sec
	p.samples = 0
	return stage.LoaderStats{TimeNs: now.UnixNano(), Workers: p.o.loaderWorkers, Batch: p.o.batch, SamplesPerSec: rate,
		WorkerBusy: p.o.loaderBusy, QueueDepth: 2, QueueCap: 4, CacheHitRate: 0.9, ReadAmp: p.o.loaderAmp}
}

// idlers starts n goroutines, each locked to an OS thread of its own,
// that wake every 100 ms: the process then has n more threads, as a
// trainer with a compute pool has.
func idlers(n int) {
	for range n {
		go func() {
			runtime.LockOSThread()
			for {
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
}
