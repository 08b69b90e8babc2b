package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/pipetop/pipetop/trainer/loader"
)

const benchUsage = `usage: pipetrain bench <command> [flags]

commands:
  loader   --data DIR --workers N --batch N --seconds N [--sampler uniform|chunk] [--cache-mb N]
           measure the data loader alone (no model): samples/s, first batch,
           worker busy, cache hit rate, read amplification and process CPU

Run a command with -h for its flags.
`

// runBench dispatches `pipetrain bench ...`.
func runBench(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, benchUsage)
		return fmt.Errorf("bench: missing command")
	}
	switch args[0] {
	case "loader":
		return benchLoader(args[1:])
	case "-h", "--help", "help":
		fmt.Print(benchUsage)
		return nil
	}
	return fmt.Errorf("bench: unknown command %q (want loader)", args[0])
}

// loaderResult is what `bench loader --json` prints.
type loaderResult struct {
	Data          string  `json:"data"`
	Sampler       string  `json:"sampler"`
	Workers       int     `json:"workers"`
	Batch         int     `json:"batch"`
	Seconds       float64 `json:"seconds"`
	Samples       int64   `json:"samples"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	DecodedMBps   float64 `json:"decoded_mb_per_sec"`
	ReadAmp       float64 `json:"read_amp"`
	CacheHitRate  float64 `json:"cache_hit_rate"`
	WorkerBusy    float64 `json:"worker_busy"`
	StartupSec    float64 `json:"startup_sec"`
	ReadSec       float64 `json:"read_sec"`
	DecodeSec     float64 `json:"decode_sec"`
	CollateSec    float64 `json:"collate_sec"`
	// CPUSec is the process's user+system CPU time over the measurement.
	CPUSec float64 `json:"cpu_sec"`
}

func benchLoader(args []string) error {
	fs := newFlagSet("bench loader", "usage: pipetrain bench loader --data DIR [flags]\n\nRuns the loader alone for --seconds after the first batch and reports its\nthroughput. Batches are fetched and released as fast as they come.\n\n")
	data := fs.String("data", "", "replay buffer directory (Zarr v2 or v3; detected)")
	workers := fs.Int("workers", 2, "decode workers (0 decodes inline)")
	batch := fs.Int("batch", 64, "batch size")
	secs := fs.Float64("seconds", 10, "measurement time after the first batch")
	sampler := fs.String("sampler", "uniform", "uniform (reference) or chunk (chunk-aware shuffling)")
	mix := fs.Int("mix", 0, "chunk groups mixed by the chunk sampler (0: as the cache allows)")
	cacheMB := fs.Int64("cache-mb", 1024, "decoded-chunk cache cap in MiB")
	seed := fs.Uint64("seed", 1, "sampling seed")
	asJSON := fs.Bool("json", false, "print one JSON object")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	wf := addWindowFlags(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	l, err := loader.New(loader.Config{Dir: *data, Keys: wf.keys(), Window: wf.window(), Batch: *batch,
		Workers: *workers, Sampler: *sampler, Mix: *mix, Seed: *seed, CacheBytes: *cacheMB << 20})
	if err != nil {
		return err
	}
	defer l.Close()
	ctx := context.Background()
	b, err := l.Next(ctx)
	if err != nil {
		return err
	}
	l.Release(b)
	startup := time.Since(t0)
	s0 := l.Stats()
	cpu0 := cpuTime()
	start := time.Now()
	var n int64
	for time.Since(start).Seconds() < *secs {
		b, err := l.Next(ctx)
		if err != nil {
			return err
		}
		n += int64(b.Size)
		l.Release(b)
	}
	el := time.Since(start).Seconds()
	s1 := l.Stats()
	cpu := cpuTime() - cpu0
	r := loaderResult{Data: *data, Sampler: l.SamplerName(), Workers: *workers, Batch: *batch, Seconds: el,
		Samples: n, SamplesPerSec: float64(n) / el, DecodedMBps: float64(s1.BytesDecoded-s0.BytesDecoded) / el / 1e6,
		CacheHitRate: s1.CacheHitRate, WorkerBusy: s1.WorkerBusy, StartupSec: startup.Seconds(),
		ReadSec: float64(s1.ReadNs-s0.ReadNs) / 1e9, DecodeSec: float64(s1.DecodeNs-s0.DecodeNs) / 1e9,
		CollateSec: float64(s1.CollateNs-s0.CollateNs) / 1e9, CPUSec: cpu}
	if used := s1.BytesUsed - s0.BytesUsed; used > 0 {
		r.ReadAmp = float64(s1.BytesDecoded-s0.BytesDecoded) / float64(used)
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("loader %s: sampler %s, %d workers, batch %d, %d windows\n", *data, r.Sampler, *workers, *batch, l.Windows())
	fmt.Printf("  %.0f samples/s over %.1fs (startup %.2fs)\n", r.SamplesPerSec, el, r.StartupSec)
	fmt.Printf("  decoded %.0f MB/s, read amplification %.2f, cache hit rate %.1f%%, worker busy %.0f%%\n",
		r.DecodedMBps, r.ReadAmp, 100*r.CacheHitRate, 100*r.WorkerBusy)
	fmt.Printf("  worker time: read %.2fs, decode %.2fs, collate %.2fs; process CPU %.2fs (%.0f samples per CPU second)\n",
		r.ReadSec, r.DecodeSec, r.CollateSec, r.CPUSec, float64(n)/max(r.CPUSec, 1e-9))
	return nil
}

// cpuTime is the process's user+system CPU time in seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
