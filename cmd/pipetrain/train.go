package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/trainer"
	"github.com/pipetop/pipetop/trainer/launch"
)

// trainFlags registers the flags shared by train and bisect.
func trainFlags(fs *flag.FlagSet, cfg *trainer.TrainConfig) {
	fs.StringVar(&cfg.Data, "data", "", "Zarr replay buffer to train on (required; make one with: pipetrain data gen)")
	fs.Func("cameras", "comma-separated camera keys under data/ (default camera0,camera1,camera2,camera3; pipetrain data import prints the ones it wrote)", func(v string) error {
		cfg.Cameras = strings.Split(v, ",")
		return nil
	})
	fs.StringVar(&cfg.Model.Preset, "preset", "small", "model size: tiny (tests), small (CPU demo) or seed (~50M-param DiT)")
	fs.IntVar(&cfg.Batch, "batch", 8, "samples per step")
	fs.IntVar(&cfg.Workers, "workers", 2, "loader decode workers (0 decodes inline on the training thread)")
	fs.StringVar(&cfg.Sampler, "sampler", "uniform", "window sampler: uniform (random windows) or chunk (chunk-aware shuffle)")
	fs.IntVar(&cfg.CacheMB, "cache-mb", 0, "decoded-chunk cache cap in MiB (0: 1024)")
	fs.IntVar(&cfg.Model.Threads, "threads", 0, "libtorch intra-op threads (0: half the cores, leaving the rest to the loader); they sleep between parallel regions (OMP_WAIT_POLICY=PASSIVE unless set)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed (model init, noise, sample order)")
	fs.StringVar(&cfg.Model.Device, "device", "auto", "auto, cpu, cuda or cuda:N")
	fs.StringVar(&cfg.Model.Precision, "precision", "auto", "auto (bf16 on CUDA, fp32 on CPU), fp32 or bf16")
	fs.Float64Var(&cfg.Model.LR, "lr", 1e-4, "AdamW learning rate")
	fs.StringVar(&cfg.Model.EncoderWeights, "encoder-weights", "", "ResNet18 weights (TorchScript or torch::save state dict); default: seeded random init")
	fs.StringVar(&cfg.Shim, "shim", "", "libpipetorch.so (default: $PIPETOP_SHIM, ./build/torch, or next to the binary)")
	fs.StringVar(&cfg.Name, "name", "pipetrain", "name shown in pipetop (the socket is NAME.PID.sock)")
}

func runTrain(args []string) error {
	fs := flag.NewFlagSet("pipetrain train", flag.ContinueOnError)
	cfg := trainer.TrainConfig{Log: os.Stderr}
	trainFlags(fs, &cfg)
	fs.Int64Var(&cfg.MaxSteps, "max-steps", 0, "stop at this step (0: no limit)")
	fs.IntVar(&cfg.Epochs, "epochs", 0, "stop after this many epochs over the windows (0: no limit)")
	fs.IntVar(&cfg.LogEvery, "log-every", 10, "read the loss back and log every N steps")
	fs.StringVar(&cfg.CkptDir, "ckpt", "", "checkpoint directory (latest.ckpt, previous.ckpt); empty: no checkpoints")
	fs.Int64Var(&cfg.CkptEvery, "ckpt-every", 500, "write a checkpoint every N steps (and at the end, and on SIGINT/SIGTERM)")
	fs.BoolVar(&cfg.Resume, "resume", false, "continue from --ckpt DIR/latest.ckpt: step, model, optimizer, RNG and sample order")
	fs.BoolVar(&cfg.NoServe, "no-serve", false, "do not open a socket for pipetop")
	recordTo := fs.String("record", "", "record every step, loader statistics and host readings to this `file` (replay with pipetop replay); with --nproc, every rank into the one file")
	nproc := fs.Int("nproc", 1, "start this many data-parallel ranks on this host (torchrun's variables, when set, make this process one rank instead)")
	fs.DurationVar(&cfg.Dist.Timeout, "dist-timeout", trainer.DefaultDistTimeout, "multi-rank: how long a rank waits for the others (rendezvous, all-reduce) before failing with an error naming the missing rank")
	fs.StringVar(&cfg.Dist.Backend, "dist-backend", "", "multi-rank: c10d backend gloo or nccl (default: nccl on CUDA, gloo on CPU)")
	bucketMB := fs.Int("bucket-mb", 25, "multi-rank: gradient all-reduce bucket size in MiB")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: pipetrain train --data DIR [flags]

Trains the policy (frozen ResNet18 over the cameras + DiT, DDPM loss, AdamW) on a
Zarr replay buffer, timing every stage and publishing each step to pipetop.
SIGINT or SIGTERM stops after the current step and writes a checkpoint.

With --nproc N, starts N data-parallel ranks on this host (gradients averaged by
libtorch's c10d: Gloo on CPU, NCCL on CUDA); under torchrun (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT set) this process is one rank. See docs/distributed.md.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Data == "" {
		fs.Usage()
		return fmt.Errorf("train: --data is required")
	}
	if *recordTo != "" && cfg.NoServe {
		return fmt.Errorf("train: --record needs the pipetop socket (drop --no-serve)")
	}
	cfg.Dist.BucketBytes = int64(*bucketMB) << 20
	rank, err := trainer.RankFromEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *nproc < 1 {
		return fmt.Errorf("train: --nproc %d: want at least 1", *nproc)
	}
	if *nproc > 1 {
		if rank.World > 1 {
			return fmt.Errorf("train: --nproc %d under a launcher that already set WORLD_SIZE=%d; leave --nproc out", *nproc, rank.World)
		}
		err := launchRanks(ctx, *nproc, cfg.Dist.Timeout, args)
		if *recordTo != "" {
			err = errors.Join(err, mergeRecordings(*recordTo, *nproc))
		}
		return err
	}
	cfg.Rank = rank
	var rec *recorder
	if *recordTo != "" {
		rec = &recorder{path: *recordTo}
		if rank.Distributed() { // each rank its own file; the launcher merges them
			rec.path = recording.RankPath(*recordTo, rank.Rank)
		}
		cfg.Serving = rec.start
		defer rec.stop()
	}
	res, err := trainer.Train(ctx, cfg)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if res.Stopped {
		fmt.Fprintf(os.Stderr, "stopped by signal at step %d\n", res.NextStep)
	}
	return nil
}

// mergeRecordings merges the recordings the n ranks wrote for --record
// path into path, and removes them once merged.
func mergeRecordings(path string, n int) error {
	parts := make([]string, n)
	for r := range n {
		parts[r] = recording.RankPath(path, r)
	}
	if err := recording.Merge(path, parts); err != nil {
		return fmt.Errorf("train: --record: %w (the ranks' files are kept)", err)
	}
	for _, p := range parts {
		os.Remove(p)
	}
	fmt.Fprintf(os.Stderr, "pipetrain: recorded %d ranks to %s\n", n, path)
	return nil
}

// launchRanks runs `pipetrain train` n times as ranks of one run, with the
// same arguments minus --nproc.
func launchRanks(ctx context.Context, n int, timeout time.Duration, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("train: find this program to launch ranks: %w", err)
	}
	_, err = launch.Run(ctx, launch.Config{NProc: n, Path: exe, Args: append([]string{"train"}, withoutFlag(args, "nproc")...),
		Grace: timeout + 5*time.Second, Kill: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "stopped by signal: all %d ranks stopped cleanly\n", n)
	}
	return nil
}

// withoutFlag removes -name/--name with its value (separate or after =)
// from args, up to a "--" terminator.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		flag := strings.TrimLeft(a, "-")
		if strings.HasPrefix(a, "-") && (flag == name) {
			i++ // skip the value
			continue
		}
		if strings.HasPrefix(a, "-") && strings.HasPrefix(flag, name+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}
