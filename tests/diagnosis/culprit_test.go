package diagnosis

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// faster is the advice compute-bound gives only when the network had the
// run's cores to itself.
const faster = "a faster device or a smaller model"

// culpritPlants: no default culprit. Plain PyTorch scripts whose step is
// not the model's alone, each beside a healthy twin: transforms in the
// loop (preprocess-bound) vs in the Dataset; 6 loader workers beside the
// network (the cores named) vs the network alone (compute-bound, "had the
// run's cores to itself"); a checkpoint every 50 steps named beside the
// verdict ("also:") vs none. They must be live: the contention and the
// preprocessing are read from the run's threads and the Python
// instrumentation, which no recording replays.
func culpritPlants(t *testing.T) []pausePlant {
	ckpt := filepath.Join(t.TempDir(), "ckpt.pt")
	noPrep := []string{"preprocess-bound", "transforms and augmentation"}
	return []pausePlant{
		{name: "transforms in the loop", script: "transforms.py", args: []string{"--seconds", "8"}, after: 3 * time.Second, interval: 4 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.PreprocessBound}, stage: stage.Preprocess,
				has: []string{"preprocess-bound: transforms and augmentation on the training thread take", "outside the model", "the Dataset's __getitem__"}, lacks: []string{faster}},
			end: pauseWant{kinds: []verdict.Kind{verdict.PreprocessBound}, stage: stage.Preprocess,
				has: []string{"the Dataset's __getitem__"}, lacks: []string{faster}}},
		// The twin: the same transforms in the workers. Whatever it is
		// (the workers take cores, the input may lag on a loaded box), it
		// is not preprocessing.
		{name: "transforms in the Dataset", script: "transforms.py", args: []string{"--seconds", "8", "--in-dataset"}, after: 3 * time.Second, interval: 4 * time.Second,
			live: pauseWant{lacks: noPrep}, end: pauseWant{lacks: noPrep}},
		// 6 workers, one intra-op thread each, beside a 1-thread network
		// on 2 cores: they keep up and use the network's cores. A loaded
		// box may make it oversubscribed, which names them too; never
		// the default culprit.
		{name: "6 workers beside the network", script: "threads.py", args: []string{"--threads", "1", "--workers", "6", "--worker-threads", "1", "--products", "1", "--seconds", "8"},
			after: 3 * time.Second, interval: 4 * time.Second,
			live: pauseWant{has: []string{"loader worker", "2 cores"}, lacks: []string{faster}},
			end:  pauseWant{has: []string{"loader worker", "2 cores"}, lacks: []string{faster}}},
		{name: "the network alone", script: "threads.py", args: []string{"--threads", "2", "--seconds", "8"}, after: 3 * time.Second, interval: 4 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: stage.Forward, has: []string{"had the run's 2 cores to itself", faster}, lacks: []string{"also:"}},
			end:  pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: stage.Forward, has: []string{"had the run's 2 cores to itself", faster}, lacks: []string{"also:"}}},
		// A 32 MB checkpoint every 50 steps of 8 ms: 11-12 % of the
		// run on a 2-core box, under a network-bound step (it sleeps: the cores are free).
		{name: "checkpoint at 12 %", script: "checkpoint.py", args: []string{"--out", ckpt, "--steps", "1000", "--every", "50", "--table", "8000000"},
			after: 3 * time.Second, interval: 5 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: anyStage, has: []string{"also: `torch.save` every 50 steps", "of the run"}},
			end:  pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: anyStage, has: []string{"also: `torch.save` every 50 steps", "of the run"}}},
		{name: "no checkpoint", script: "checkpoint.py", args: []string{"--out", ckpt, "--steps", "1000", "--every", "100000", "--table", "8000000"},
			after: 3 * time.Second, interval: 5 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: anyStage, lacks: []string{"also:"}},
			end:  pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: anyStage, lacks: []string{"also:"}}},
	}
}

// leakPlants: a loss list that keeps each step's graph, whose memory creep
// the live view names and the end-of-run summary names too (pipetop run
// keeps the resident memory it read), vs the same loop keeping
// loss.item(). Live: the creep is read from /proc over the run, which no
// recording replays; 12 s is the least span the rule judges (CreepMinNs).
func leakPlants() []pausePlant {
	creep := []string{"memory creep: the trainer's resident memory grew", ".item()"}
	return []pausePlant{
		{name: "loss list with its graph", script: "loss_list.py", args: []string{"--seconds", "17"}, after: 1 * time.Second, interval: 12 * time.Second,
			live: pauseWant{has: creep}, end: pauseWant{has: creep}},
		{name: "loss list of .item()", script: "loss_list.py", args: []string{"--seconds", "17", "--item"}, after: 1 * time.Second, interval: 12 * time.Second,
			live: pauseWant{lacks: []string{"memory creep"}}, end: pauseWant{lacks: []string{"memory creep"}}},
	}
}

// TestMemoryCreepAtTheEnd runs the leak plants at once (they mostly
// sleep).
func TestMemoryCreepAtTheEnd(t *testing.T) {
	testkit.Serial(t)
	runPausePlants(t, leakPlants())
}

// TestNoDefaultCulprit runs the culprit plants one at a time: they read
// CPU shares, and each wants the cores to itself.
func TestNoDefaultCulprit(t *testing.T) {
	testkit.Serial(t)
	for _, p := range culpritPlants(t) {
		runPausePlants(t, []pausePlant{p})
	}
}
