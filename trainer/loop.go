// Package trainer is pipetrain's training loop: it pulls batches from a
// source, drives the model one stage at a time, times every stage with the
// shared stage timer and publishes each step to pipetop. Bisect runs the
// same loop with stages switched off.
package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/trainer/loader"
)

// Source feeds batches to the loop. Next blocks until a batch is ready;
// io.EOF ends the run cleanly.
type Source interface {
	Next(ctx context.Context) (*loader.Batch, error)
	Release(b *loader.Batch)
}

// Model is the network as the loop drives it: one call per stage.
type Model interface {
	BeginStep(step int64) error
	Upload(b *loader.Batch) error
	Forward() error
	Backward() error
	OptimStep() error
	Sync() (loss float32, err error)
	// PollGPU moves finished GPU stage timings into dst without blocking
	// and returns how many it wrote (always 0 without a GPU).
	PollGPU(dst []GPUTiming) int
}

// GPUTiming is the GPU time of one stage of one step. Stage is the
// stage's index in the loop's records (StageList), as the model
// binding reports it: no name lookups between the device and the record.
type GPUTiming struct {
	Step  int64
	Stage int
	Ns    int64
}

// Publisher receives what the loop measured; *ipc.Server is one.
type Publisher interface {
	Publish(r *stage.Record)
	PublishLoader(ls stage.LoaderStats)
	PublishEvent(kind, msg string)
}

// StageList is the stage list of the loop's records: stage.Canonical, or
// stage.MultiRank (with comm) when the loop is one rank of several.
func StageList(multiRank bool) []string {
	if multiRank {
		return stage.MultiRank
	}
	return stage.Canonical
}

// Collective is the comm stage of a multi-rank run.
type Collective interface {
	// AllReduce averages the step's gradients over the ranks. vote is this
	// rank's wish to stop after this step; stopAll reports that some rank
	// voted so, the same answer on every rank.
	AllReduce(vote bool) (stopAll bool, err error)
}

// ProgressPublisher is a Publisher that also samples where the loop is
// (ipc.Server): the loop hands it its timer's Progress when it starts.
type ProgressPublisher interface {
	SetProgress(func() stage.Progress)
}

// Stages switches the model's stages on and off (bisect phases).
type Stages struct {
	Upload, Forward, Backward, Optim bool
}

// AllStages is the full training step.
var AllStages = Stages{Upload: true, Forward: true, Backward: true, Optim: true}

// LoopConfig configures one run of the loop.
type LoopConfig struct {
	StartStep int64         // the first step's number (resumed runs continue)
	MaxSteps  int64         // stop after this many steps in total; 0: until the source ends or ctx is done
	Duration  time.Duration // stop after this much wall time; 0: no limit
	LogEvery  int           // read the loss back (sync stage) every N steps; default 10
	Stages    Stages
	Model     Model     // nil runs the source alone
	Publisher Publisher // nil publishes nothing
	// LoaderStats, when set, is published once a second.
	LoaderStats func() stage.LoaderStats
	// Log, when set, is called after every loss readback.
	Log func(step int64, loss float32, s stage.Summary)
	// Checkpoint, when set, is called every CkptEvery steps and once when
	// ctx is cancelled, with the number of the next step to run.
	Checkpoint func(nextStep int64) error
	CkptEvery  int64
	// Window is how many recent steps Result.Summary covers; default 1000.
	Window int
	// Comm, when set, makes the run one rank of several: gradients are
	// averaged after backward (the comm stage), and the ranks stop
	// together: cancelling ctx or reaching Duration only votes to stop,
	// and every rank ends after the step in which some rank voted.
	Comm Collective
}

// Result is what a run did.
type Result struct {
	Steps     int64         // steps run by this call
	NextStep  int64         // the step a resumed run would start at
	Losses    []float32     // every loss read back, in order
	LastLoss  float32       // the last of Losses (NaN if none)
	Summary   stage.Summary // over the last Window steps
	Stopped   bool          // ctx was cancelled
	Wall      time.Duration
	CkptSteps []int64 // steps at which checkpoints were written
}

// gpuLag is how many steps a record waits for its GPU timings.
const gpuLag = 16

// Run runs the loop until MaxSteps, Duration, the end of the source, an
// error, or ctx is cancelled (which writes a checkpoint when configured and
// is not an error).
func Run(ctx context.Context, cfg LoopConfig, src Source) (Result, error) {
	l, err := newLoop(cfg)
	if err != nil {
		return Result{}, err
	}
	return l.run(ctx, src)
}

type loop struct {
	cfg       LoopConfig
	timer     *stage.Timer
	idx       map[string]int
	window    *stage.StepRing
	pending   []stage.Record // waiting for GPU timings
	timings   []GPUTiming
	sawGPU    bool  // the model has reported GPU timings
	newestGPU int64 // newest step with a GPU timing
	res       Result
	start     time.Time
	stopAll   bool            // some rank voted to stop (multi-rank)
	dataCtx   context.Context // what the data wait honours
}

func newLoop(cfg LoopConfig) (*loop, error) {
	if cfg.LogEvery <= 0 {
		cfg.LogEvery = 10
	}
	if cfg.Window <= 0 {
		cfg.Window = 1000
	}
	t, err := stage.NewTimer(StageList(cfg.Comm != nil))
	if err != nil {
		return nil, err
	}
	l := &loop{cfg: cfg, timer: t, idx: map[string]int{}, window: stage.NewStepRing(t.Names(), cfg.Window),
		timings: make([]GPUTiming, 64)}
	l.window.Reserve()
	for i, n := range t.Names() {
		l.idx[n] = i
	}
	l.res.LastLoss = float32(math.NaN())
	return l, nil
}

func (l *loop) run(ctx context.Context, src Source) (Result, error) {
	l.dataCtx = ctx
	if l.cfg.Comm != nil {
		// A rank leaves only at a step boundary all ranks agreed on, so
		// its data wait does not abort on a signal.
		l.dataCtx = context.WithoutCancel(ctx)
	}
	l.start = time.Now()
	lastLoader := l.start
	if p, ok := l.cfg.Publisher.(ProgressPublisher); ok {
		p.SetProgress(l.timer.Progress)
	}
	step := l.cfg.StartStep
	for {
		if l.cfg.MaxSteps > 0 && step >= l.cfg.MaxSteps {
			break
		}
		if l.stopAll {
			l.res.Stopped = true
			break
		}
		if l.cfg.Comm == nil && l.cfg.Duration > 0 && time.Since(l.start) >= l.cfg.Duration {
			break
		}
		if l.cfg.Comm == nil && ctx.Err() != nil {
			l.res.Stopped = true
			break
		}
		err := l.step(ctx, src, step)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				l.res.Stopped = true
				break
			}
			return l.finish(step), fmt.Errorf("step %d: %w", step, err)
		}
		step++
		l.res.Steps++
		if l.cfg.LoaderStats != nil && l.cfg.Publisher != nil && time.Since(lastLoader) >= time.Second {
			l.cfg.Publisher.PublishLoader(l.cfg.LoaderStats())
			lastLoader = time.Now()
		}
		if l.cfg.Checkpoint != nil && l.cfg.CkptEvery > 0 && step%l.cfg.CkptEvery == 0 {
			if err := l.checkpoint(step); err != nil {
				return l.finish(step), err
			}
		}
	}
	res := l.finish(step)
	if l.res.Stopped && l.cfg.Checkpoint != nil {
		if err := l.checkpoint(step); err != nil {
			return res, err
		}
		res.CkptSteps = l.res.CkptSteps
	}
	return res, nil
}

func (l *loop) checkpoint(next int64) error {
	if err := l.cfg.Checkpoint(next); err != nil {
		return fmt.Errorf("checkpoint at step %d: %w", next, err)
	}
	l.res.CkptSteps = append(l.res.CkptSteps, next)
	return nil
}

// finish flushes the records still waiting for GPU timings.
func (l *loop) finish(next int64) Result {
	l.publishReady(math.MaxInt64)
	l.res.NextStep = next
	l.res.Wall = time.Since(l.start)
	l.res.Summary = l.window.Summarize(0)
	return l.res
}

// span runs fn as the named stage of the current step.
func (l *loop) span(name string, fn func() error) error {
	sp := l.timer.Begin(l.idx[name])
	err := fn()
	sp.End()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (l *loop) step(ctx context.Context, src Source, step int64) error {
	l.timer.StartStep(step)
	m, st := l.cfg.Model, l.cfg.Stages
	var b *loader.Batch
	err := l.span(stage.DataWait, func() (err error) { b, err = src.Next(l.dataCtx); return err })
	if err != nil {
		return err
	}
	samples := b.Size
	if m != nil {
		if err := m.BeginStep(step); err != nil {
			return err
		}
		if st.Upload {
			if err := l.span(stage.H2D, func() error { return m.Upload(b) }); err != nil {
				return err
			}
		}
	}
	src.Release(b)
	if m != nil {
		if err := l.network(ctx, m, st); err != nil {
			return err
		}
	}
	loss, hasLoss, err := l.maybeSync(step)
	if err != nil {
		return err
	}
	rec := l.timer.EndStep(samples, loss, hasLoss)
	l.window.Add(rec)
	l.pending = append(l.pending, *rec)
	l.collectGPU()
	if hasLoss && l.cfg.Log != nil {
		l.cfg.Log(step, loss, l.window.Summarize(0))
	}
	return nil
}

func (l *loop) network(ctx context.Context, m Model, st Stages) error {
	// Three plain calls rather than a table of method values: those would
	// be allocated on every step.
	if st.Forward {
		if err := l.span(stage.Forward, m.Forward); err != nil {
			return err
		}
	}
	if st.Backward {
		if err := l.span(stage.Backward, m.Backward); err != nil {
			return err
		}
		if l.cfg.Comm != nil {
			if err := l.comm(ctx); err != nil {
				return err
			}
		}
	}
	if st.Optim {
		return l.span(stage.Optim, m.OptimStep)
	}
	return nil
}

// comm runs the gradient all-reduce as the comm stage, carrying this
// rank's stop vote.
func (l *loop) comm(ctx context.Context) error {
	vote := ctx.Err() != nil || (l.cfg.Duration > 0 && time.Since(l.start) >= l.cfg.Duration)
	sp := l.timer.Begin(l.idx[stage.Comm])
	stop, err := l.cfg.Comm.AllReduce(vote)
	sp.End()
	if err != nil {
		return fmt.Errorf("%s: %w", stage.Comm, err)
	}
	l.stopAll = l.stopAll || stop
	return nil
}

// maybeSync reads the loss back every LogEvery steps.
func (l *loop) maybeSync(step int64) (float32, bool, error) {
	m := l.cfg.Model
	if m == nil || (step+1)%int64(l.cfg.LogEvery) != 0 {
		return 0, false, nil
	}
	var loss float32
	err := l.span(stage.Sync, func() (err error) { loss, err = m.Sync(); return err })
	if err != nil {
		return 0, false, err
	}
	if !l.cfg.Stages.Forward {
		return 0, false, nil // nothing computed a loss
	}
	l.res.Losses = append(l.res.Losses, loss)
	l.res.LastLoss = loss
	return loss, true, nil
}

// collectGPU attaches finished GPU timings to their pending records and
// publishes the records that are complete or too old to wait for. Timings
// arrive in step order, so a timing of step k completes every step before k.
func (l *loop) collectGPU() {
	if l.cfg.Model != nil {
		n := l.cfg.Model.PollGPU(l.timings)
		for _, t := range l.timings[:n] {
			l.attachGPU(t)
			l.newestGPU = max(l.newestGPU, t.Step)
		}
	}
	last := l.pending[len(l.pending)-1].Step
	if !l.sawGPU {
		l.publishReady(last) // no GPU timings: nothing to wait for
		return
	}
	l.publishReady(max(l.newestGPU-1, last-gpuLag))
}

func (l *loop) attachGPU(t GPUTiming) {
	l.sawGPU = true
	k := t.Stage
	if k < 0 || k >= stage.MaxStages {
		return
	}
	for i := range l.pending {
		if r := &l.pending[i]; r.Step == t.Step {
			if r.GPU[k] < 0 {
				r.GPU[k] = 0
			}
			r.GPU[k] += t.Ns
			l.window.UpdateGPU(r.Step, r.GPU[:r.NumStages])
			return
		}
	}
}

// publishReady publishes pending records up to and including step upTo.
func (l *loop) publishReady(upTo int64) {
	n := 0
	for n < len(l.pending) && l.pending[n].Step <= upTo {
		if l.cfg.Publisher != nil {
			l.cfg.Publisher.Publish(&l.pending[n])
		}
		n++
	}
	l.pending = append(l.pending[:0], l.pending[n:]...)
}
