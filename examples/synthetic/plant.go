package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
)

// plant holds the planted-bottleneck flags.
type plant struct {
	paced      bool
	startDelay time.Duration // sit in startStage before the first step
	startStage string
	hangAfter  int64 // after this many steps, sit in hangStage for good
	hangStage  string
	every      int64 // every Nth step, spikeStage takes spike
	spikeStage string
	spike      time.Duration
	driftAfter time.Duration // after this long, driftStage takes drift
	driftStage string
	drift      time.Duration
	leakMBps   float64 // hold this many more MB of resident memory each second
}

func plantFlags(fs *flag.FlagSet, p *plant) {
	fs.BoolVar(&p.paced, "paced", false, "sleep through every stage: real step times and progress frames (ignores -rate)")
	fs.DurationVar(&p.startDelay, "start-delay", 0, "before the first step, sit this long in -start-stage (implies -paced)")
	fs.StringVar(&p.startStage, "start-stage", stage.DataWait, "the stage of -start-delay")
	fs.Int64Var(&p.hangAfter, "hang-after", 0, "after this many steps, hang in -hang-stage until killed (implies -paced)")
	fs.StringVar(&p.hangStage, "hang-stage", stage.DataWait, "the stage of -hang-after")
	fs.Int64Var(&p.every, "every", 0, "every Nth step, -spike-stage takes -spike (implies -paced)")
	fs.StringVar(&p.spikeStage, "spike-stage", stage.DataWait, "the stage of -every")
	fs.DurationVar(&p.spike, "spike", 250*time.Millisecond, "the duration of -every's stage")
	fs.DurationVar(&p.driftAfter, "drift-after", 0, "after this long, -drift-stage takes -drift (implies -paced)")
	fs.StringVar(&p.driftStage, "drift-stage", stage.DataWait, "the stage of -drift-after")
	fs.DurationVar(&p.drift, "drift", 0, "the duration of -drift-after's stage")
	fs.Float64Var(&p.leakMBps, "leak-mb-per-sec", 0, "grow resident memory by this many MB a second (implies -paced)")
}

// check validates the planted flags against the stage list.
func (p *plant) check(cpu map[string]time.Duration) error {
	p.paced = p.paced || p.startDelay > 0 || p.hangAfter > 0 || p.every > 0 || p.driftAfter > 0 || p.leakMBps > 0
	for _, c := range []struct {
		flag, name string
		used       bool
	}{{"-spike-stage", p.spikeStage, p.every > 0}, {"-drift-stage", p.driftStage, p.driftAfter > 0}} {
		if _, ok := cpu[c.name]; c.used && !ok {
			return fmt.Errorf("%s %q is not in -stages", c.flag, c.name)
		}
	}
	if p.every < 0 || p.hangAfter < 0 || p.leakMBps < 0 {
		return fmt.Errorf("-every, -hang-after and -leak-mb-per-sec must not be negative")
	}
	return nil
}

// where is the paced loop's progress, read by the server's publisher.
type where struct {
	mu sync.Mutex
	p  stage.Progress
}

func (w *where) set(step, done int64, stepStart time.Time, name string) {
	w.mu.Lock()
	w.p = stage.Progress{Step: step, Done: done, StepStartNs: stepStart.UnixNano(), Stage: name, SinceNs: time.Now().UnixNano()}
	w.mu.Unlock()
}

func (w *where) progress() stage.Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.p
	p.TimeNs = time.Now().UnixNano()
	return p
}

// runPaced runs the planted loop: every stage really takes its time.
func runPaced(o options, p *publisher, srv *ipc.Server, sig chan os.Signal) error {
	w := &where{p: stage.Progress{Step: -1}}
	srv.SetProgress(w.progress)
	start := time.Now()
	leak := &leaker{}
	lastLoader := start
	if o.plant.startDelay > 0 {
		w.set(0, 0, start, o.plant.startStage)
		if !sleep(o.plant.startDelay, sig, leak, o.plant.leakMBps) {
			return nil
		}
	}
	for step := int64(0); o.steps == 0 || step < o.steps; step++ {
		t0 := time.Now()
		if o.plant.hangAfter > 0 && step >= o.plant.hangAfter {
			w.set(step, step, t0, o.plant.hangStage)
			sleep(24*time.Hour, sig, leak, o.plant.leakMBps)
			return nil
		}
		r := p.plan(step, time.Since(start))
		for i, name := range p.names {
			if name == stage.Other || r.CPU[i] == 0 {
				continue
			}
			w.set(step, step, t0, name)
			began := time.Now()
			if !sleep(time.Duration(r.CPU[i]), sig, leak, o.plant.leakMBps) {
				return nil
			}
			r.CPU[i] = int64(time.Since(began)) // what a timer would measure
		}
		w.set(step, step, t0, stage.Other)
		p.finish(&r, t0, time.Now())
		srv.Publish(&r)
		if o.loader && time.Since(lastLoader) >= time.Second {
			srv.PublishLoader(p.loaderStats(time.Now(), lastLoader))
			lastLoader = time.Now()
		}
	}
	time.Sleep(200 * time.Millisecond)
	return nil
}

// sleep waits d (false when a signal came), growing the leak meanwhile.
func sleep(d time.Duration, sig chan os.Signal, leak *leaker, mbps float64) bool {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return true
		}
		select {
		case <-sig:
			return false
		case <-time.After(min(left, 100*time.Millisecond)):
		}
		leak.grow(mbps)
	}
}

// leaker holds ever more touched memory, as a leaking loop does.
type leaker struct {
	held [][]byte
	last time.Time
}

func (l *leaker) grow(mbps float64) {
	now := time.Now()
	if mbps <= 0 || l.last.IsZero() {
		l.last = now
		return
	}
	n := int(mbps * 1e6 * now.Sub(l.last).Seconds())
	l.last = now
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1 // touch every page so it is resident
	}
	l.held = append(l.held, b)
}

// plan makes step's record without its times: the stage durations (with
// jitter and the planted spikes and drift at elapsed), and the GPU times.
func (p *publisher) plan(step int64, elapsed time.Duration) stage.Record {
	r := stage.Record{Step: step, NumStages: len(p.names), Samples: int32(p.o.batch)}
	r.ClearGPU()
	pl := p.o.plant
	for i, name := range p.names {
		if d, ok := p.o.cpu[name]; ok {
			if pl.driftAfter > 0 && elapsed >= pl.driftAfter && name == pl.driftStage {
				d = pl.drift
			}
			if pl.every > 0 && step%pl.every == pl.every-1 && name == pl.spikeStage {
				d = pl.spike
			}
			r.CPU[i] = p.jitter(d)
		}
		if d, ok := p.o.gpu[name]; ok {
			r.GPU[i] = p.jitter(d)
		} else if len(p.o.gpu) > 0 {
			r.GPU[i] = 0
		}
	}
	return r
}

// finish stamps a paced record's times: other gets the wall time the
// measured stages did not cover.
func (p *publisher) finish(r *stage.Record, start, end time.Time) {
	r.StartNs, r.EndNs = start.UnixNano(), end.UnixNano()
	var covered int64
	other := -1
	for i, name := range p.names {
		if name == stage.Other {
			other = i
		} else {
			covered += r.CPU[i]
		}
	}
	if other >= 0 {
		r.CPU[other] = max(0, r.EndNs-r.StartNs-covered)
	}
	r.HasLoss, r.Loss = true, float32(1/(1+float64(r.Step)/500))
	p.samples += int64(p.o.batch)
}
