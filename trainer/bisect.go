package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/trainer/loader"
)

// BisectConfig is what `pipetrain bisect` runs.
type BisectConfig struct {
	Train        TrainConfig   // dataset, preset, batch, workers, ...
	PhaseTime    time.Duration // measured time per phase, after warm-up
	WarmupSteps  int64         // steps run (and not measured) before each phase
	BatchSweep   []int         // extra batch sizes for the train-fixed and full phases
	PlantedSleep map[string]time.Duration
}

// BisectReport is the outcome of a bisect run; its JSON form is documented
// in docs/bisect.md.
type BisectReport struct {
	Data    string                `json:"data"`
	Preset  string                `json:"preset"`
	Device  string                `json:"device"`
	Batch   int                   `json:"batch"`
	Workers int                   `json:"workers"`
	Phases  []verdict.PhaseResult `json:"phases"`
	Verdict verdict.Verdict       `json:"verdict"`
}

// Bisect measures the pipeline piece by piece — the network on a fixed
// batch (forward, then the whole step), the loader alone, the loop on
// in-memory batches, and the full pipeline — publishing each phase live to
// pipetop, and names the bottleneck.
func Bisect(ctx context.Context, cfg BisectConfig, log io.Writer) (BisectReport, error) {
	if cfg.PhaseTime <= 0 {
		cfg.PhaseTime = 10 * time.Second
	}
	if cfg.WarmupSteps <= 0 {
		cfg.WarmupSteps = 3
	}
	if log == nil {
		log = io.Discard
	}
	b := &bisector{cfg: cfg, log: log}
	defer b.close()
	if err := b.open(cfg.Train); err != nil {
		return BisectReport{}, err
	}
	info := b.s.Policy.Info()
	rep := BisectReport{Data: cfg.Train.Data, Preset: info.Config.Preset, Device: info.Device,
		Batch: cfg.Train.Batch, Workers: cfg.Train.Workers}
	for _, batch := range append([]int{cfg.Train.Batch}, cfg.BatchSweep...) {
		phases, err := b.runBatch(ctx, batch, batch == cfg.Train.Batch)
		rep.Phases = append(rep.Phases, phases...)
		if err != nil {
			return rep, err
		}
	}
	rep.Verdict = verdict.DiagnoseBisect(rep.Phases)
	if b.srv != nil {
		b.srv.PublishEvent("verdict", rep.Verdict.String())
	}
	return rep, nil
}

type bisector struct {
	cfg  BisectConfig
	log  io.Writer
	s    *Session
	srv  *ipc.Server
	step int64
}

func (b *bisector) open(tc TrainConfig) error {
	var err error
	if b.s, err = Open(tc); err != nil {
		return err
	}
	// Each loader phase opens its own loader; the session's would only
	// prefetch in the background and steal CPU from the other phases.
	b.s.Loader.Close()
	if tc.NoServe {
		return nil
	}
	hello := b.s.hello()
	var cfg map[string]any
	json.Unmarshal(hello.Config, &cfg)
	cfg["kind"], cfg["bisect"] = "pipetrain-bisect", true
	hello.Config = ipc.EncodeConfig(cfg)
	if b.srv, err = ipc.Listen(tc.Name, hello, ipc.ServerOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "pipetop socket: %s\n", b.srv.Path())
	return nil
}

func (b *bisector) close() {
	if b.srv != nil {
		b.srv.Close()
	}
	if b.s != nil {
		b.s.Close()
	}
}

// runBatch runs the phases for one batch size: all five for the main batch,
// train-fixed and full for the sweep.
func (b *bisector) runBatch(ctx context.Context, batch int, main bool) ([]verdict.PhaseResult, error) {
	fixed := loader.SyntheticBatch(b.s.Loader.Shape(), batch, uint64(b.cfg.Train.Seed))
	type phase struct {
		name   string
		stages Stages
		src    func() (Source, func(), error)
		noNet  bool
	}
	fixedSrc := func() (Source, func(), error) { return &fixedSource{b: fixed}, func() {}, nil }
	phases := []phase{
		{verdict.PhaseForward, Stages{Forward: true}, fixedSrc, false},
		{verdict.PhaseTrainFixed, Stages{Forward: true, Backward: true, Optim: true}, fixedSrc, false},
		{verdict.PhaseLoader, Stages{}, b.realLoader(batch), true},
		{verdict.PhaseSynthetic, AllStages, func() (Source, func(), error) { return newSyntheticSource(b.s.Loader.Shape(), batch), func() {}, nil }, false},
		{verdict.PhaseFull, AllStages, b.realLoader(batch), false},
	}
	var out []verdict.PhaseResult
	for _, p := range phases {
		if !main && p.name != verdict.PhaseTrainFixed && p.name != verdict.PhaseFull {
			continue
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		src, done, err := p.src()
		if err != nil {
			return out, err
		}
		if !p.noNet && !p.stages.Upload {
			// The fixed batch goes to the device once, before the phase.
			if err := (PolicyModel{b.s.Policy}).Upload(fixed); err != nil {
				done()
				return out, fmt.Errorf("bisect %s: upload fixed batch: %w", p.name, err)
			}
		}
		res, err := b.measure(ctx, p.name, batch, p.stages, src, p.noNet)
		done()
		if err != nil {
			return out, fmt.Errorf("bisect phase %s (batch %d): %w", p.name, batch, err)
		}
		out = append(out, res)
		fmt.Fprintln(b.log, res.Row())
	}
	return out, nil
}

// realLoader opens a fresh loader over the dataset for one phase, so its
// statistics cover that phase alone.
func (b *bisector) realLoader(batch int) func() (Source, func(), error) {
	return func() (Source, func(), error) {
		ld, err := loader.New(b.cfg.Train.loaderConfig(batch, 0))
		if err != nil {
			return nil, nil, err
		}
		return &statsSource{ld}, func() { ld.Close() }, nil
	}
}

// measure warms a phase up, then runs it for PhaseTime.
func (b *bisector) measure(ctx context.Context, name string, batch int, st Stages, src Source, noNet bool) (verdict.PhaseResult, error) {
	if b.srv != nil {
		b.srv.PublishEvent("phase", fmt.Sprintf("%s (batch %d)", name, batch))
	}
	var model Model
	if !noNet {
		model = b.plant(PolicyModel{b.s.Policy})
	}
	lc := LoopConfig{StartStep: b.step, MaxSteps: b.step + b.cfg.WarmupSteps, LogEvery: 5, Stages: st, Model: model}
	warm, err := Run(ctx, lc, src)
	if err != nil {
		return verdict.PhaseResult{}, err
	}
	lc.StartStep, lc.MaxSteps, lc.Duration = warm.NextStep, 0, b.cfg.PhaseTime
	if b.srv != nil {
		lc.Publisher = b.srv
	}
	if ss, ok := src.(*statsSource); ok {
		lc.LoaderStats = ss.Stats
	}
	res, err := Run(ctx, lc, src)
	b.step = res.NextStep
	if err != nil {
		return verdict.PhaseResult{}, err
	}
	sum := res.Summary
	pr := verdict.PhaseResult{Name: name, Batch: batch, Steps: res.Steps, Seconds: res.Wall.Seconds(),
		StepsPerSec: sum.StepsPerSec, SamplesPerSec: sum.SamplesPerSec, Summary: sum}
	if ss, ok := src.(*statsSource); ok {
		ls := ss.Stats()
		pr.Loader = &ls
	}
	return pr, nil
}

// plant wraps the model with the configured sleeps (tests of the verdict).
func (b *bisector) plant(m Model) Model {
	if len(b.cfg.PlantedSleep) == 0 {
		return m
	}
	return &sleepyModel{Model: m, sleep: b.cfg.PlantedSleep}
}

// fixedSource hands out the same in-memory batch forever.
type fixedSource struct{ b *loader.Batch }

func (f *fixedSource) Next(ctx context.Context) (*loader.Batch, error) { return f.b, ctx.Err() }
func (f *fixedSource) Release(*loader.Batch)                           {}

// syntheticSource cycles a few in-memory synthetic batches: the loop's cost
// with input but without I/O or decoding.
type syntheticSource struct {
	pool []*loader.Batch
	next int
}

func newSyntheticSource(sh loader.Shape, batch int) *syntheticSource {
	s := &syntheticSource{}
	for i := 0; i < 4; i++ {
		s.pool = append(s.pool, loader.SyntheticBatch(sh, batch, uint64(100+i)))
	}
	return s
}

func (s *syntheticSource) Next(ctx context.Context) (*loader.Batch, error) {
	b := s.pool[s.next%len(s.pool)]
	s.next++
	return b, ctx.Err()
}

func (s *syntheticSource) Release(*loader.Batch) {}

// statsSource is a real loader.
type statsSource struct{ *loader.Loader }

// sleepyModel sleeps in the named stages: a planted, known bottleneck.
type sleepyModel struct {
	Model
	sleep map[string]time.Duration
}

func (m *sleepyModel) nap(s string) { time.Sleep(m.sleep[s]) }

func (m *sleepyModel) Upload(b *loader.Batch) error { m.nap(stage.H2D); return m.Model.Upload(b) }
func (m *sleepyModel) Forward() error               { m.nap(stage.Forward); return m.Model.Forward() }
func (m *sleepyModel) Backward() error              { m.nap(stage.Backward); return m.Model.Backward() }
func (m *sleepyModel) OptimStep() error             { m.nap(stage.Optim); return m.Model.OptimStep() }

// WriteTable prints the bisect table and verdict in 80 columns.
func (r BisectReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "bisect: %s, preset %s on %s, batch %d, %d workers\n", r.Data, r.Preset, r.Device, r.Batch, r.Workers)
	fmt.Fprintln(w, "stage columns: % of the mean step; GPU: % of the step the GPU was busy")
	fmt.Fprintln(w, verdict.PhaseHeader)
	for _, p := range r.Phases {
		fmt.Fprintln(w, p.Row())
	}
	for _, p := range r.Phases {
		if p.Loader != nil && p.Name == verdict.PhaseLoader {
			fmt.Fprintf(w, "loader: read amplification %.1fx, workers busy %.0f %%, cache hit %.0f %%\n",
				p.Loader.ReadAmp, 100*p.Loader.WorkerBusy, 100*p.Loader.CacheHitRate)
		}
	}
	fmt.Fprintln(w)
	verdict.WriteWrapped(w, "verdict: ", r.Verdict.Headline)
	verdict.WriteWrapped(w, "next:    ", r.Verdict.Next)
}
