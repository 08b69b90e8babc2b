package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/pipetop/pipetop/trainer"
)

// trainFlags registers the flags shared by train and bisect.
func trainFlags(fs *flag.FlagSet, cfg *trainer.TrainConfig) {
	fs.StringVar(&cfg.Data, "data", "", "Zarr replay buffer to train on (required; make one with: pipetrain data gen)")
	fs.StringVar(&cfg.Model.Preset, "preset", "small", "model size: tiny (tests), small (CPU demo) or seed (~50M-param DiT)")
	fs.IntVar(&cfg.Batch, "batch", 8, "samples per step")
	fs.IntVar(&cfg.Workers, "workers", 2, "loader decode workers (0 decodes inline on the training thread)")
	fs.StringVar(&cfg.Sampler, "sampler", "uniform", "window sampler: uniform (random windows) or chunk (chunk-aware shuffle)")
	fs.IntVar(&cfg.CacheMB, "cache-mb", 0, "decoded-chunk cache cap in MiB (0: 1024)")
	fs.IntVar(&cfg.Model.Threads, "threads", 0, "libtorch intra-op threads (0: half the cores, leaving the rest to the loader)")
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
	recordTo := fs.String("record", "", "record every step, loader statistics and host readings to this `file` (replay with pipetop replay)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: pipetrain train --data DIR [flags]

Trains the policy (frozen ResNet18 over the cameras + DiT, DDPM loss, AdamW) on a
Zarr replay buffer, timing every stage and publishing each step to pipetop.
SIGINT or SIGTERM stops after the current step and writes a checkpoint.

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rec *recorder
	if *recordTo != "" {
		rec = &recorder{path: *recordTo}
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
