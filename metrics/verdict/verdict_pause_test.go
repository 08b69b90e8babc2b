package verdict

import (
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// everyN is a window of 400 steps of 19 ms (forward, backward, optim) in
// which stage name takes pause on every nth step and nothing otherwise.
func everyN(name string, n int, pause int64) stage.Summary {
	w := stage.NewStepRing(append(stage.Canonical, stage.Eval), 4096)
	t0 := int64(1e18)
	for i := range 400 {
		m := map[string]int64{stage.DataWait: ms1 / 10, stage.Forward: 9 * ms1, stage.Backward: 8 * ms1, stage.Optim: 2 * ms1}
		if i%n == n-1 {
			m[name] += pause
		}
		r := stage.Record{Step: int64(i), NumStages: len(w.Names()), Samples: 8}
		r.ClearGPU()
		var sum int64
		for k, st := range w.Names() {
			r.CPU[k] = m[st]
			sum += m[st]
		}
		r.StartNs, r.EndNs = t0, t0+sum
		t0 = r.EndNs
		w.Add(&r)
	}
	return w.Summarize(0)
}

// TestPauseVerdicts: a pause every N steps is worded as such, with its
// share of the run, in each rule that sees it, with the cause the evidence
// names: the loader's epoch boundary, a checkpoint, an evaluation.
func TestPauseVerdicts(t *testing.T) {
	epoch := everyN(stage.DataWait, 8, 1530*ms1)
	restarts := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.01, Prefetch: 2, Cores: 2, Length: 8,
		WorkerStarts: 10, WorkerStartNs: 1500 * ms1, Site: "train.py:42"}
	persistent := *restarts
	persistent.PersistentWorkers, persistent.WorkerStarts = true, 2
	slowPersistent := persistent
	slowPersistent.WorkerBusyEach, slowPersistent.BatchesPerSec = []float64{0.9, 0.9}, 2
	amplifiedRestarts := *restarts
	amplifiedRestarts.HDF5 = robomimic(200, 200, 200, true).HDF5
	otherLength := *restarts
	otherLength.Length = 50
	amplifiedOtherLength := otherLength
	amplifiedOtherLength.HDF5 = robomimic(200, 200, 200, false).HDF5
	save := stage.ProfileOf(samplesOf(1e18,
		testRow{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{fr("save_checkpoint", "train.py", 30),
			lib("torch", "save", "torch/serialization.py", 423), lib("torch", "_save", "torch/serialization.py", 650)}), 96},
		testRow{stage.RoleTrain, stage.Other, -1, mainLoop, 4}))
	logCode := stage.ProfileOf(samplesOf(1e18, testRow{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{logging}), 90},
		testRow{stage.RoleTrain, stage.Other, -1, mainLoop, 10}))
	checkpoint := everyN(stage.Other, 25, 188*ms1)
	// Steady logging on every step beside the pauses' own samples in a
	// save: the pauses are named, not the mean's logging.
	logAndSave := *logCode
	logAndSave.Pauses = []stage.CodeGroup{*save.Group(stage.RoleTrain, stage.Other)}
	shard := stage.ProfileOf(samplesOf(1e18, testRow{stage.RoleTrain, stage.DataWait, -1, join(mainLoop, []stage.CodeFrame{fr("decode_item", "train.py", 12)}), 90}))
	shard.Pauses = stage.ProfileOf(samplesOf(1e18, testRow{stage.RoleTrain, stage.DataWait, -1,
		join(mainLoop, []stage.CodeFrame{fr("open_shard", "train.py", 20), lib("tarfile", "TarFile.open", "tarfile.py", 1800)}), 90})).Groups
	decodeRow := testRow{stage.RoleWorker, "", 0, join(mainLoop, []stage.CodeFrame{fr("decode_item", "train.py", 12)}), 90}
	workersOnly := stage.ProfileOf(samplesOf(1e18, decodeRow))
	slowFetch := stage.ProfileOf(samplesOf(1e18, decodeRow, testRow{stage.RoleWorker, stage.SlowFetch, 0, join(mainLoop, []stage.CodeFrame{fr("open_shard", "train.py", 20)}), 60}))
	for _, tc := range []struct {
		name     string
		in       Inputs
		want     Kind
		contains []string
		lacks    []string
	}{
		{"workers restarted every epoch", Inputs{Summary: epoch, Loader: restarts}, InputStalls,
			[]string{"every 8th step waits 1.53 s", "of the run's time", "8 steps is one pass over the DataLoader (len 8)", "10 worker processes started",
				"1.50 s to the first batch", "set persistent_workers=True in the DataLoader made at train.py:42"}, []string{"collate_fn", "find what recurs"}},
		{"workers restarted every epoch, reading amplified HDF5 chunks: both", Inputs{Summary: epoch, Loader: &amplifiedRestarts}, InputStalls,
			[]string{"set persistent_workers=True in the DataLoader made at train.py:42", "; then ", "h5repack -l ", "robomimic.hdf5 is opened before the DataLoader's workers fork"}, nil},
		{"persistent workers: each epoch's first fetch, no restart blamed", Inputs{Summary: epoch, Loader: &persistent}, InputStalls,
			[]string{"every 8th step waits 1.53 s", "8 steps is one pass over the DataLoader (len 8): its persistent workers prefetch nothing across the epoch's end",
				"let the workers prefetch through the epoch's end: a sampler that spans many passes in the DataLoader made at train.py:42 (DataLoader(..., sampler=RandomSampler(dataset, replacement=True, num_samples=K * len(dataset))))"},
			[]string{"persistent_workers=True", "new workers", "find what recurs", "deepen the prefetch"}},
		{"persistent workers too slow for the loop: that first", Inputs{Summary: epoch, Loader: &slowPersistent}, InputStalls,
			[]string{"its persistent workers prefetch nothing across the epoch's end", "the slow batches cost more than the workers can hide",
				"; then let the workers prefetch through the epoch's end"}, []string{"find what recurs", "new workers"}},
		{"persistent workers, another period: guesses", Inputs{Summary: everyN(stage.DataWait, 5, 1530*ms1), Loader: &persistent}, InputStalls,
			[]string{"find what recurs every 5 steps"}, []string{"persistent_workers", "epoch"}},
		{"a period that is not the loader's length", Inputs{Summary: epoch, Loader: &otherLength}, InputStalls,
			[]string{"find what recurs every 8 steps"}, []string{"persistent_workers"}},
		{"another period, amplified HDF5 chunks: the guesses, then the rechunk", Inputs{Summary: epoch, Loader: &amplifiedOtherLength}, InputStalls,
			[]string{"find what recurs every 8 steps", "; then ", "h5repack -l "}, []string{"persistent_workers=True"}},
		{"a checkpoint every 25 steps", Inputs{Summary: checkpoint, Code: save, Host: &Host{Writes: Series{TimeNs: []int64{1, 2}, Value: []float64{0.5 * 162e6 / (25 * checkpoint.WallMean / 1e9), 1.5 * 162e6 / (25 * checkpoint.WallMean / 1e9)}}}}, Untimed,
			[]string{"188 ms every 25 steps, 28 % of the run's time", "under torch `save`", "a checkpoint: torch `save` called from `save_checkpoint` at train.py:30 writes every 25 steps, 188 ms each",
				"about 154 MiB each time", "save less often, or in a background thread or process"}, []string{"wrap"}},
		{"a checkpoint without the write counter", Inputs{Summary: checkpoint, Code: save}, Untimed,
			[]string{"188 ms every 25 steps", "a checkpoint", "save less often"}, []string{"each time"}},
		{"a periodic log write", Inputs{Summary: checkpoint, Code: stage.ProfileOf(samplesOf(1e18,
			testRow{stage.RoleTrain, stage.Other, -1, join(mainLoop, []stage.CodeFrame{logging, lib("tensorboard", "EventFileWriter.write_event", "tensorboard/writer.py", 80)}), 90},
			testRow{stage.RoleTrain, stage.Other, -1, mainLoop, 10}))}, Untimed,
			[]string{"a file write: tensorboard `EventFileWriter.write_event` called from `log_metrics` at train.py:88 writes every 25 steps", "write less often"}, []string{"checkpoint"}},
		{"another periodic call", Inputs{Summary: checkpoint, Code: logCode}, Untimed,
			[]string{"188 ms every 25 steps", "make `log_metrics` at train.py:88 cheaper or call it less often than every 25 steps"}, []string{"checkpoint"}},
		{"a checkpoint beside steady logging: the pauses' own samples", Inputs{Summary: checkpoint, Code: &logAndSave}, Untimed,
			[]string{"of each pause under torch `save`", "a checkpoint: torch `save` called from `save_checkpoint` at train.py:30 writes every 25 steps"}, []string{"log_metrics"}},
		{"stalls of a loader without workers: the stalls' own samples", Inputs{Summary: everyN(stage.DataWait, 8, 1530*ms1), Code: shard}, InputStalls,
			[]string{"; in the stalls, data_wait spends 100 % under tarfile `TarFile.open`, called from `open_shard` at train.py:20"}, []string{"decode_item"}},
		{"stalls of a loader with workers: their slow fetches' own samples", Inputs{Summary: epoch, Loader: &otherLength, Code: slowFetch}, InputStalls,
			[]string{"; in the slow fetches, workers spend 100 % in `open_shard` at train.py:20",
				"make `open_shard` at train.py:20 cheaper, or do it once per worker (in a worker_init_fn) instead of in the fetch that pays for it"},
			[]string{"decode_item", "find what recurs"}},
		{"workers without slow fetches: all the workers' samples", Inputs{Summary: epoch, Loader: &otherLength, Code: workersOnly}, InputStalls,
			[]string{"; workers spend 100 % in `decode_item` at train.py:12", "find what recurs every 8 steps"}, []string{"slow fetches"}},
		{"a periodic pause without samples", Inputs{Summary: checkpoint}, Untimed,
			[]string{"188 ms every 25 steps", "find what the loop does every 25 steps"}, nil},
		{"evaluation every 50 steps", Inputs{Summary: everyN(stage.Eval, 50, 900*ms1)}, StageBound,
			[]string{"eval-bound: evaluation takes 900 ms every 50 steps, 49 % of the run's time", "evaluate less often than every 50 steps"}, nil},
		{"a periodic readback", Inputs{Summary: everyN(stage.Sync, 20, 200*ms1)}, SyncBound,
			[]string{"200 ms every 20 steps", "every 20 steps"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.in)
			if v.Kind != tc.want {
				t.Fatalf("got %s (%s), want %s", v.Kind, v, tc.want)
			}
			for _, c := range tc.contains {
				if !strings.Contains(v.String(), c) {
					t.Errorf("verdict %q lacks %q", v, c)
				}
			}
			for _, c := range tc.lacks {
				if strings.Contains(v.String(), c) {
					t.Errorf("verdict %q has %q", v, c)
				}
			}
		})
	}
}

// TestEpochRestartAdvice: the input advice of a loader whose workers
// restart every epoch is persistent_workers, not a slow collate_fn (the
// end-of-run summary of the run said so without a pattern).
func TestEpochRestartAdvice(t *testing.T) {
	l := &stage.LoaderStats{Source: "torch", Workers: 2, WorkerBusy: 0.01, Prefetch: 2, Length: 8, WorkerStarts: 10, WorkerStartNs: 1500 * ms1, Site: "t.py:9"}
	if a := InputAdvice(l); !strings.Contains(a, "persistent_workers=True in the DataLoader made at t.py:9") || strings.Contains(a, "collate_fn") {
		t.Errorf("advice %q", a)
	}
	cheap := *l
	cheap.WorkerStartNs = 20 * ms1
	if a := InputAdvice(&cheap); strings.Contains(a, "persistent") {
		t.Errorf("a 20 ms worker start is blamed: %q", a)
	}
}
