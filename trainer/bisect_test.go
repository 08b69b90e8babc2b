package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/trainer/dataset"
	"github.com/pipetop/pipetop/trainer/torch"
)

var lz4Data, gzipData onceDir

// bisectData generates (once) a full-size (128x128) dataset with zarr's
// default chunk guess, and the same data rechunked to one frame per chunk.
func bisectData(t *testing.T) (string, string) {
	dir := lz4Data.get(t, func(dir string) error {
		def := filepath.Join(dir, "default.zarr")
		if err := dataset.Generate(dataset.GenOptions{Out: def, Episodes: 8, Frames: 200, ChunkFrames: 0, Seed: 5}); err != nil {
			return err
		}
		return dataset.Rechunk(def, filepath.Join(dir, "rechunked.zarr"), dataset.RechunkOptions{ChunkFrames: 1})
	})
	return filepath.Join(dir, "default.zarr"), filepath.Join(dir, "rechunked.zarr")
}

// slowData generates (once) the input-bound case: zarr's default chunk
// guess and a slow codec (gzip), so one loader worker gives a fraction of
// the samples the tiny network takes. With blosc-lz4 the two were within
// 3x on a quiet box, and a loaded one (CI, other packages' tests on both
// cores) slowed the network 7x in a one-second phase and flipped the
// verdict to compute-bound.
func slowData(t *testing.T) string {
	dir := gzipData.get(t, func(dir string) error {
		return dataset.Generate(dataset.GenOptions{Out: filepath.Join(dir, "default.zarr"), Episodes: 8, Frames: 200, ChunkFrames: 0, Codec: "gzip", Seed: 5})
	})
	return filepath.Join(dir, "default.zarr")
}

func bisectConfig(t *testing.T, data string, workers int) BisectConfig {
	return BisectConfig{
		Train: TrainConfig{Data: data, Shim: shim(t), Name: "bisect-test", Batch: 8, Workers: workers, Seed: 3,
			CacheMB: 32, NoServe: true, Model: torch.Config{Preset: "tiny", Threads: 1, Device: "cpu"}},
		PhaseTime: time.Second, WarmupSteps: 1,
	}
}

func bisect(t *testing.T, cfg BisectConfig) BisectReport {
	t.Helper()
	rep, err := Bisect(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	t.Logf("\n%s", table.String())
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
		if utf8.RuneCountInString(line) > 80 && !strings.HasPrefix(line, "bisect:") {
			t.Errorf("line wider than 80 columns: %q", line)
		}
	}
	return rep
}

func TestBisectDefaultChunkingIsInputBound(t *testing.T) {
	def := slowData(t)
	cfg := dwarfedCache(bisectConfig(t, def, 1))
	rep := bisect(t, cfg)
	v := rep.Verdict
	if v.Kind != verdict.InputBound || !strings.Contains(v.Next, "pipetrain data rechunk "+def+" ") {
		t.Fatalf("verdict %s, want input-bound with the rechunk advice", v)
	}
	if strings.Contains(v.Next, "inline") {
		t.Errorf("with a worker the advice should not mention inline decoding: %s", v.Next)
	}
	if len(rep.Phases) != 5 {
		t.Fatalf("%d phases, want 5", len(rep.Phases))
	}
}

// dwarfedCache makes the data dwarf the loader's cache, as real datasets
// do: with a cache that holds most of this small set, the loader keeps up
// with the tiny model even on zarr's default chunking.
func dwarfedCache(cfg BisectConfig) BisectConfig {
	cfg.Train.CacheMB = 1
	return cfg
}

func TestBisectInlineLoaderIsNamed(t *testing.T) {
	v := bisect(t, dwarfedCache(bisectConfig(t, slowData(t), 0))).Verdict
	if v.Kind != verdict.InputBound || !strings.Contains(v.Next, "--workers") {
		t.Fatalf("verdict %s, want input-bound naming --workers", v)
	}
}

func TestBisectRechunkedIsNotInputBound(t *testing.T) {
	_, re := bisectData(t)
	rep := bisect(t, bisectConfig(t, re, 2))
	if rep.Verdict.Kind == verdict.InputBound {
		t.Fatalf("verdict %s: rechunked data should keep up", rep.Verdict)
	}
	for _, p := range rep.Phases {
		if p.Name == verdict.PhaseLoader && p.Loader.ReadAmp > 1.5 {
			t.Errorf("read amplification after rechunk %.2f, want <= 1.5", p.Loader.ReadAmp)
		}
	}
}

func TestBisectPlantedSleepIsNamed(t *testing.T) {
	_, re := bisectData(t)
	cfg := bisectConfig(t, re, 2)
	cfg.PlantedSleep = map[string]time.Duration{stage.Backward: 1500 * time.Millisecond} // dominant even when the tiny forward runs 10x slower on a loaded box (CI saw 4x)
	rep := bisect(t, cfg)
	if rep.Verdict.Stage != stage.Backward {
		t.Fatalf("verdict %s names %q, want backward", rep.Verdict, rep.Verdict.Stage)
	}
	// The JSON report carries every phase and the verdict.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	json.Unmarshal(b, &back)
	if len(back["phases"].([]any)) != 5 || back["verdict"].(map[string]any)["stage"] != "backward" {
		t.Fatalf("json report: %s", b)
	}
}

// TestBisectContentionOnAmplifiedChunksAdvisesRechunk plants the issue's
// case: zarr's default chunks with a cache that holds part of the data,
// loader workers and a network that compete for few cores. Whichever
// finding the phases give — contention (each half fast enough alone) or
// input-bound (the loader barely faster alone) — a loader that decodes
// many times the bytes it uses must be told to rechunk first.
func TestBisectContentionOnAmplifiedChunksAdvisesRechunk(t *testing.T) {
	def, _ := bisectData(t)
	cfg := bisectConfig(t, def, 2)
	cfg.Train.CacheMB = 8
	cfg.Train.Model = torch.Config{Preset: "small", Threads: 2, Device: "cpu"}
	rep := bisect(t, cfg)
	v := rep.Verdict
	if !strings.Contains(v.Headline, "contention") && v.Kind != verdict.InputBound {
		t.Skipf("the phases gave %s on this machine: neither contention nor input-bound, nothing to check", v)
	}
	rechunk := strings.Index(v.Next, "pipetrain data rechunk "+def+" ")
	if rechunk < 0 {
		t.Fatalf("verdict %s: an amplified loader must be told to rechunk", v)
	}
	if w := strings.Index(v.Next, "--workers"); w >= 0 && w < rechunk && strings.Contains(v.Headline, "contention") {
		t.Errorf("contention advice splits the cores before rechunking: %s", v.Next)
	}
	t.Logf("verdict: %s", v)
}
