package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/ipc"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/trainer/episodes"
	"github.com/pipetop/pipetop/trainer/loader"
	"github.com/pipetop/pipetop/trainer/torch"
)

// TrainConfig is what `pipetrain train` runs.
type TrainConfig struct {
	Data string // Zarr replay buffer
	// Cameras names the camera arrays under data/ (empty: the loader's
	// default camera0..camera3); the state and action keep theirs.
	Cameras   []string
	Name      string // trainer name shown in pipetop (socket NAME.PID.sock)
	Shim      string // libpipetorch.so; empty: torch.FindShim
	Batch     int
	Workers   int
	Sampler   string // "uniform" or "chunk"
	CacheMB   int    // decoded-chunk cache cap in MiB (0: the loader's default)
	MaxSteps  int64  // stop at this step number (0: no limit)
	Epochs    int    // stop after this many epochs (0: no limit)
	LogEvery  int
	CkptDir   string // empty: no checkpoints
	CkptEvery int64
	Resume    bool // continue from CkptDir/latest.ckpt
	Seed      int64
	Model     torch.Config // Preset, Device, Precision, Threads, LR, EncoderWeights ...
	NoServe   bool         // do not open a pipetop socket
	Log       io.Writer    // progress lines; nil: discard
	// Serving, when set, is called with the pipetop socket's path once it
	// listens and before the first step (an in-process recorder attaches).
	Serving func(socket string)
	// Rank places this process in a multi-rank run (RankFromEnv); the zero
	// value and Single are a single process.
	Rank Rank
	Dist DistConfig // process group settings of a multi-rank run
}

// ckptMeta is the loop's part of a checkpoint, stored as the shim's extra
// bytes next to model, optimizer and RNG state.
type ckptMeta struct {
	Version  int    `json:"version"`
	NextStep int64  `json:"next_step"`
	Sample   int64  `json:"sample"` // loader stream position
	Preset   string `json:"preset"`
	Batch    int    `json:"batch"`
	Seed     int64  `json:"seed"`
	Sampler  string `json:"sampler"`
	// WorldSize is the number of ranks that wrote it (0 in checkpoints of
	// single-process runs made before ranks existed: 1).
	WorldSize int `json:"world_size,omitempty"`
}

// Session is an opened training setup: the shim, the policy and the loader.
type Session struct {
	Lib    *torch.Lib
	Policy *torch.Policy
	Loader *loader.Loader
	Dist   *torch.Dist // nil in a single-process run
	cfg    TrainConfig
	start  ckptMeta
	// tid is the training thread (Train locks the loop to it), 0 when
	// the loop may move between threads.
	tid int
}

// Open loads the shim, opens the dataset and builds the policy, resuming
// from a checkpoint when asked.
func Open(cfg TrainConfig) (*Session, error) {
	if cfg.Batch < 1 {
		return nil, fmt.Errorf("--batch %d: want at least 1", cfg.Batch)
	}
	if cfg.Rank.World < 1 {
		cfg.Rank = Single
	}
	shim := cfg.Shim
	if shim == "" {
		var err error
		if shim, err = torch.FindShim(); err != nil {
			return nil, err
		}
	}
	lib, err := torch.Open(shim)
	if err != nil {
		return nil, err
	}
	s := &Session{Lib: lib, cfg: cfg}
	if s.Loader, err = s.openLoader(0); err != nil {
		return nil, err
	}
	sh := s.Loader.Shape()
	m := cfg.Model
	m.Cams, m.H, m.W, m.NObs, m.Horizon, m.StateDim, m.ActionDim = sh.Cams, sh.H, sh.W, sh.NObs, sh.Horizon, sh.StateDim, sh.ActionDim
	m.Seed = cfg.Seed
	if s.Policy, err = s.newPolicy(m); err != nil {
		s.Loader.Close()
		return nil, err
	}
	if cfg.Resume {
		if err := s.resume(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if cfg.Rank.Distributed() {
		if err := s.join(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// newPolicy builds the policy; on a multi-rank run whose device is auto or
// cuda, rank LOCAL_RANK takes CUDA device LOCAL_RANK.
func (s *Session) newPolicy(m torch.Config) (*torch.Policy, error) {
	p, err := s.Lib.NewPolicy(m)
	if err != nil || !s.cfg.Rank.Distributed() {
		return p, err
	}
	want := fmt.Sprintf("cuda:%d", s.cfg.Rank.LocalRank)
	if dev := p.Info().Device; strings.HasPrefix(dev, "cuda") && dev != want && (m.Device == "" || m.Device == "auto" || m.Device == "cuda") {
		p.Close()
		m.Device = want
		return s.Lib.NewPolicy(m)
	}
	return p, nil
}

// join enters the process group and makes the policy a replica of rank 0's.
func (s *Session) join() error {
	r := s.cfg.Rank
	dev := -1
	if d := s.Policy.Info().Device; strings.HasPrefix(d, "cuda") {
		dev = 0
		if _, idx, ok := strings.Cut(d, ":"); ok {
			dev, _ = strconv.Atoi(idx)
		}
	}
	timeout := s.cfg.Dist.Timeout
	if timeout <= 0 {
		timeout = DefaultDistTimeout
	}
	d, err := s.Lib.NewDist(torch.DistOptions{Backend: s.cfg.Dist.Backend, MasterAddr: r.MasterAddr, MasterPort: r.MasterPort,
		Rank: r.Rank, WorldSize: r.World, DeviceIndex: dev, Timeout: timeout, BucketBytes: s.cfg.Dist.BucketBytes})
	if err != nil {
		return fmt.Errorf("rank %d of %d: %w", r.Rank, r.World, err)
	}
	s.Dist = d
	s.Policy.SetStageList(StageList(true))
	if err := s.Policy.Join(d, s.start.NextStep); err != nil {
		return fmt.Errorf("rank %d of %d: %w", r.Rank, r.World, err)
	}
	return nil
}

func (s *Session) openLoader(startSample int64) (*loader.Loader, error) {
	return loader.New(s.cfg.loaderConfig(s.cfg.Batch, startSample))
}

// resume loads CkptDir/latest.ckpt into the policy and moves the loader to
// the checkpoint's sample position. A corrupt checkpoint is refused; the
// live policy and the files on disk are left as they were.
func (s *Session) resume() error {
	if s.cfg.CkptDir == "" {
		return fmt.Errorf("--resume needs --ckpt DIR")
	}
	path := filepath.Join(s.cfg.CkptDir, LatestCheckpoint)
	extra, err := s.Policy.Load(path)
	if err != nil {
		return fmt.Errorf("resume: %w (the checkpoint before it, if any, is %s)", err,
			filepath.Join(s.cfg.CkptDir, PreviousCheckpoint))
	}
	var meta ckptMeta
	if err := json.Unmarshal(extra, &meta); err != nil || meta.Version != 1 {
		return fmt.Errorf("resume from %s: unreadable loop state (%v)", path, err)
	}
	if w := max(1, meta.WorldSize); w != s.cfg.Rank.World {
		return fmt.Errorf("resume from %s: checkpoint was written by a run of %d rank(s), this run has %d; "+
			"resume needs the same world size (each rank's shard of the windows and the sample position depend on it)",
			path, w, s.cfg.Rank.World)
	}
	if meta.Batch != s.cfg.Batch || meta.Seed != s.cfg.Seed || meta.Sampler != s.Loader.SamplerName() {
		return fmt.Errorf("resume from %s: checkpoint was made with --batch %d --seed %d --sampler %s; this run has --batch %d --seed %d --sampler %s",
			path, meta.Batch, meta.Seed, meta.Sampler, s.cfg.Batch, s.cfg.Seed, s.Loader.SamplerName())
	}
	s.Loader.Close()
	ld, err := s.openLoader(meta.Sample)
	if err != nil {
		return err
	}
	s.Loader, s.start = ld, meta
	return nil
}

func (c TrainConfig) loaderConfig(batch int, startSample int64) loader.Config {
	var keys episodes.Keys
	if len(c.Cameras) > 0 {
		keys = episodes.DefaultKeys
		keys.Cameras = c.Cameras
	}
	return loader.Config{Dir: c.Data, Keys: keys, Batch: batch, Workers: c.Workers, Sampler: c.Sampler,
		Seed: uint64(c.Seed), StartSample: startSample, CacheBytes: int64(c.CacheMB) << 20,
		Rank: c.Rank.Rank, World: c.Rank.World}
}

// StartStep is the step the run starts at (non-zero when resumed).
func (s *Session) StartStep() int64 { return s.start.NextStep }

// Checkpoint writes the policy and the loop state into CkptDir atomically.
func (s *Session) Checkpoint(nextStep int64) (string, error) {
	meta := ckptMeta{Version: 1, NextStep: nextStep, Sample: s.Loader.Position(), Preset: s.Policy.Info().Config.Preset,
		Batch: s.cfg.Batch, Seed: s.cfg.Seed, Sampler: s.Loader.SamplerName(), WorldSize: s.cfg.Rank.World}
	extra, err := json.Marshal(meta)
	if err != nil {
		return "", err
	}
	return WriteCheckpoint(s.cfg.CkptDir, func(tmp string) error { return s.Policy.Save(tmp, extra) })
}

// Close releases the loader, the process group and the policy.
func (s *Session) Close() {
	if s.Loader != nil {
		s.Loader.Close()
	}
	if s.Dist != nil {
		s.Dist.Close()
	}
	if s.Policy != nil {
		s.Policy.Close()
	}
}

// Train runs `pipetrain train`: the instrumented loop over the real loader,
// published to pipetop, with periodic and final checkpoints.
func Train(ctx context.Context, cfg TrainConfig) (Result, error) {
	s, err := Open(cfg)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	// The loop stays on this thread, which the hello names: viewers tell
	// it from libtorch's intra-op pool by its id.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s.tid = syscall.Gettid()
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	info := s.Policy.Info()
	s.describe(logw)
	var srv *ipc.Server
	if !cfg.NoServe {
		if srv, err = ipc.Listen(s.socketName(), s.hello(), ipc.ServerOptions{}); err != nil {
			return Result{}, err
		}
		defer srv.Close()
		fmt.Fprintf(logw, "pipetop socket: %s\n", srv.Path())
		if cfg.Serving != nil {
			cfg.Serving(srv.Path())
		}
	}
	lc := LoopConfig{StartStep: s.StartStep(), MaxSteps: s.maxSteps(), LogEvery: cfg.LogEvery,
		Stages: AllStages, Model: PolicyModel{s.Policy}, LoaderStats: s.Loader.Stats,
		Log: func(step int64, loss float32, sum stage.Summary) { logLine(logw, step, loss, sum) }}
	if srv != nil {
		lc.Publisher = srv
	}
	if s.Dist != nil {
		lc.Comm = distComm{s.Policy, s.Dist}
	}
	if cfg.CkptDir != "" && s.cfg.Rank.Rank == 0 { // rank 0 writes; every rank reads on resume
		lc.CkptEvery = cfg.CkptEvery
		lc.Checkpoint = func(next int64) error {
			path, err := s.Checkpoint(next)
			if err == nil {
				fmt.Fprintf(logw, "checkpoint: step %d -> %s\n", next, path)
				if srv != nil {
					srv.PublishEvent("checkpoint", fmt.Sprintf("step %d: %s", next, path))
				}
			}
			return err
		}
	}
	res, err := Run(ctx, lc, s.Loader)
	if err == nil && !res.Stopped && lc.Checkpoint != nil && (len(res.CkptSteps) == 0 || res.CkptSteps[len(res.CkptSteps)-1] != res.NextStep) {
		err = lc.Checkpoint(res.NextStep) // the end of the run
	}
	fmt.Fprintf(logw, "done: %d steps in %s (%s, %s)\n", res.Steps, res.Wall.Round(time.Millisecond), info.Device, info.Precision)
	if s.Dist != nil && err == nil {
		if sum, cerr := s.Policy.Checksum(); cerr == nil {
			fmt.Fprintf(logw, "rank %d: parameter checksum %016x at step %d\n", s.cfg.Rank.Rank, sum, res.NextStep)
		}
	}
	return res, err
}

// socketName is the pipetop socket's NAME: --name, plus -rankR on a
// multi-rank run, so NAME-rankR.PID.sock tells which rank a pid is.
func (s *Session) socketName() string {
	if !s.cfg.Rank.Distributed() {
		return s.cfg.Name
	}
	return fmt.Sprintf("%s-rank%d", s.cfg.Name, s.cfg.Rank.Rank)
}

// distComm is the loop's comm stage over a process group.
type distComm struct {
	p *torch.Policy
	d *torch.Dist
}

// AllReduce averages the gradients and adds up the stop votes.
func (c distComm) AllReduce(vote bool) (bool, error) {
	n, err := c.p.AllReduceGrads(c.d, vote)
	return n > 0, err
}

// maxSteps turns --max-steps and --epochs into a last step number.
func (s *Session) maxSteps() int64 {
	limit := s.cfg.MaxSteps
	if s.cfg.Epochs > 0 {
		e := int64(s.cfg.Epochs) * s.stepsPerEpoch()
		if limit == 0 || e < limit {
			limit = e
		}
	}
	return limit
}

func (s *Session) stepsPerEpoch() int64 {
	return max(1, int64(s.Loader.EpochWindows()/s.cfg.Batch))
}

func (s *Session) hello() ipc.Hello {
	info := s.Policy.Info()
	r := s.cfg.Rank
	h := ipc.Hello{TID: s.tid, Stages: StageList(r.Distributed()), Config: ipc.EncodeConfig(map[string]any{
		"kind": "pipetrain", "data": s.cfg.Data, "preset": info.Config.Preset, "batch": s.cfg.Batch,
		"workers": s.cfg.Workers, "sampler": s.Loader.SamplerName(), "device": info.Device,
		"precision": info.Precision, "encoder_params": info.EncoderParams, "policy_params": info.PolicyParams,
		"encoder_random_init": info.EncoderRandomInit, "epoch_steps": s.stepsPerEpoch(),
		"start_step": s.StartStep(), "max_steps": s.maxSteps(), "torch": info.TorchVersion})}
	if r.Distributed() {
		rank := r.Rank
		h.Rank, h.WorldSize, h.Run = &rank, r.World, r.Run
	}
	return h
}

func (s *Session) describe(w io.Writer) {
	info := s.Policy.Info()
	fmt.Fprintf(w, "policy: preset %s on %s (%s), libtorch %s, %d threads\n", info.Config.Preset, info.Device, info.Precision, info.TorchVersion, info.Threads)
	fmt.Fprintf(w, "params: encoder %d (frozen), policy %d (trained)\n", info.EncoderParams, info.PolicyParams)
	if info.EncoderRandomInit {
		fmt.Fprintln(w, "encoder: no weights file given (--encoder-weights): seeded random init")
	}
	fmt.Fprintf(w, "data: %s, %d windows, %d steps/epoch, batch %d, %d workers, %s sampler\n",
		s.cfg.Data, s.Loader.Windows(), s.stepsPerEpoch(), s.cfg.Batch, s.cfg.Workers, s.Loader.SamplerName())
	if r := s.cfg.Rank; r.Distributed() {
		di := s.Dist.Info()
		fmt.Fprintf(w, "rank %d of %d (run %s): %s process group, shard of %d windows, all-reduce in %d MiB buckets, timeout %s\n",
			r.Rank, r.World, r.Run, di.Backend, s.Loader.EpochWindows(), di.BucketBytes>>20, time.Duration(di.TimeoutMs)*time.Millisecond)
	}
	if s.StartStep() > 0 {
		fmt.Fprintf(w, "resumed at step %d (sample %d)\n", s.StartStep(), s.start.Sample)
	}
}

func logLine(w io.Writer, step int64, loss float32, s stage.Summary) {
	fmt.Fprintf(w, "step %6d  loss %.4f  %.2f it/s  %.1f samples/s", step, loss, s.StepsPerSec, s.SamplesPerSec)
	for _, st := range s.Stages {
		if st.Share >= 0.01 {
			fmt.Fprintf(w, "  %s %.0f%%", st.Name, 100*st.Share)
		}
	}
	fmt.Fprintln(w)
}

// PolicyModel drives a torch.Policy as the loop's Model.
type PolicyModel struct{ P *torch.Policy }

// BeginStep tags the GPU timings of the step's stages.
func (m PolicyModel) BeginStep(step int64) error { return m.P.BeginStep(step) }

// Upload copies a batch to the device.
func (m PolicyModel) Upload(b *loader.Batch) error {
	return m.P.Upload(b.Images, b.State, b.Action, b.Size)
}

// Forward runs the network and the loss.
func (m PolicyModel) Forward() error { return m.P.Forward() }

// Backward back-propagates the loss.
func (m PolicyModel) Backward() error { return m.P.Backward() }

// OptimStep takes an optimizer step.
func (m PolicyModel) OptimStep() error { return m.P.OptimStep() }

// Sync waits for the device and reads the loss back.
func (m PolicyModel) Sync() (float32, error) { return m.P.Sync() }

// PollGPU moves finished GPU stage timings into dst.
func (m PolicyModel) PollGPU(dst []GPUTiming) int {
	var buf [64]torch.StageTiming
	n := m.P.PollGPUTimings(buf[:min(len(dst), len(buf))])
	for i := 0; i < n; i++ {
		dst[i] = GPUTiming{Step: buf[i].Step, Stage: buf[i].Stage, Ns: buf[i].Ns}
	}
	return n
}
