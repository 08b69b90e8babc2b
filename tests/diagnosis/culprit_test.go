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
// run's cores to itself"). They must be live: the contention and the
// preprocessing are read from the run's threads and the Python
// instrumentation as the run goes, which no recording replays.
func culpritPlants() []pausePlant {
	noPrep := []string{"preprocess-bound", "transforms and augmentation"}
	return []pausePlant{
		{name: "transforms in the loop", script: "transforms.py", args: []string{"--seconds", "6"}, after: 2 * time.Second, interval: 3 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.PreprocessBound}, stage: stage.Preprocess,
				has: []string{"preprocess-bound: transforms and augmentation on the training thread take", "outside the model", "the Dataset's __getitem__"}, lacks: []string{faster}},
			end: pauseWant{kinds: []verdict.Kind{verdict.PreprocessBound}, stage: stage.Preprocess,
				has: []string{"the Dataset's __getitem__"}, lacks: []string{faster}}},
		// The twin: the same transforms in the workers. Whatever it is
		// (the workers take cores, the input may lag on a loaded box), it
		// is not preprocessing.
		{name: "transforms in the Dataset", script: "transforms.py", args: []string{"--seconds", "6", "--in-dataset"}, after: 2 * time.Second, interval: 3 * time.Second,
			live: pauseWant{lacks: noPrep}, end: pauseWant{lacks: noPrep}},
		// 6 workers, one intra-op thread each, beside a 1-thread network
		// on 2 cores: they keep up and use the network's cores. A loaded
		// box may make it oversubscribed, which names them too; never
		// the default culprit.
		{name: "6 workers beside the network", script: "threads.py", args: []string{"--threads", "1", "--workers", "6", "--worker-threads", "1", "--products", "1", "--seconds", "6"},
			after: 2 * time.Second, interval: 3 * time.Second,
			live: pauseWant{has: []string{"loader worker", "2 cores"}, lacks: []string{faster}},
			end:  pauseWant{has: []string{"loader worker", "2 cores"}, lacks: []string{faster}}},
		{name: "the network alone", script: "threads.py", args: []string{"--threads", "2", "--seconds", "6"}, after: 2 * time.Second, interval: 3 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: stage.Forward, has: []string{"had the run's 2 cores to itself", faster}, lacks: []string{"also:"}},
			end:  pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: stage.Forward, has: []string{"had the run's 2 cores to itself", faster}, lacks: []string{"also:"}}},
	}
}

// costPlants: costs named whichever verdict wins, each beside a healthy
// twin: a checkpoint every 50 steps named beside the verdict ("also:") vs
// none; a loss list that keeps each step's graph, whose memory creep the
// live view names and the end-of-run summary names too (pipetop run keeps
// the resident memory it read), vs the same loop keeping loss.item().
// Live: the pauses and the resident memory are read as the run goes (no
// recording replays pipetop run's kept readings); 12 s is the least span
// the creep rule judges (CreepMinNs), and a pause is told periodic in a
// window of 10 of them (5 s). They mostly sleep: they run at once.
func costPlants(t *testing.T) []pausePlant {
	ckpt, none := filepath.Join(t.TempDir(), "ckpt.pt"), filepath.Join(t.TempDir(), "none.pt")
	creep := []string{"memory creep: the trainer's resident memory grew", ".item()"}
	return []pausePlant{
		// A 32 MB checkpoint every 50 steps of 8 ms: 11-12 % of the
		// run on a 2-core box, under a network-bound step (it sleeps: the
		// cores are free), named beside the verdict ("also: `torch.save`
		// every 50 steps"). A disk that writes it slower (a fresh CI clone:
		// 553 ms a save, 21 % of the run) makes it the untimed verdict,
		// which names it too (`save_checkpoint`): never hidden. On a busy
		// disk the rename over the old file (os.replace: no Python frame
		// of its own) took 70 % of each pause in a fresh CI clone, and
		// the cost then names the user's `save_checkpoint` at that line.
		// The live viewer reads 8 s of it, about a dozen saves.
		{name: "checkpoint at 12 %", script: "checkpoint.py", args: []string{"--out", ckpt, "--steps", "1500", "--every", "50", "--table", "8000000"},
			after: 3 * time.Second, interval: 8 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.ComputeBound, verdict.Untimed}, stage: anyStage, has: []string{"save"}},
			end:  pauseWant{kinds: []verdict.Kind{verdict.ComputeBound, verdict.Untimed}, stage: anyStage, has: []string{"save", "every 50 steps", "of the run"}}},
		{name: "no checkpoint", script: "checkpoint.py", args: []string{"--out", none, "--steps", "1500", "--every", "100000", "--table", "8000000"},
			after: 3 * time.Second, interval: 8 * time.Second,
			live: pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: anyStage, lacks: []string{"also:"}},
			end:  pauseWant{kinds: []verdict.Kind{verdict.ComputeBound}, stage: anyStage, lacks: []string{"also:"}}},

		{name: "loss list with its graph", script: "loss_list.py", args: []string{"--seconds", "17"}, after: 1 * time.Second, interval: 12 * time.Second,
			live: pauseWant{has: creep}, end: pauseWant{has: creep}},
		{name: "loss list of .item()", script: "loss_list.py", args: []string{"--seconds", "17", "--item"}, after: 1 * time.Second, interval: 12 * time.Second,
			live: pauseWant{lacks: []string{"memory creep"}}, end: pauseWant{lacks: []string{"memory creep"}}},
	}
}

// TestCostsBesideTheVerdict runs the cost plants at once.
func TestCostsBesideTheVerdict(t *testing.T) {
	testkit.Serial(t)
	runPausePlants(t, costPlants(t))
}

// TestNoDefaultCulprit runs the culprit plants one at a time: they read
// CPU shares, and each wants the cores to itself.
func TestNoDefaultCulprit(t *testing.T) {
	testkit.Serial(t)
	for _, p := range culpritPlants() {
		runPausePlants(t, []pausePlant{p})
	}
}
