package diagnosis

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/metrics/verdict"
)

// tripRun is what the end-of-run summary of examples/auto/float_images.py
// says: its verdict, throughput and the batches' trip from the workers.
type tripRun struct {
	verdict *verdict.Verdict
	samples float64
	loader  *stage.LoaderStats
}

// runTrip runs the script of examples/auto with args under pipetop run
// and reads its end-of-run summary.
func runTrip(t *testing.T, script string, args ...string) tripRun {
	t.Helper()
	var r endOfRun
	_, logs, err := underRun(&r, 0, []string{"OMP_NUM_THREADS=1"}, script, args...)(t, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.endVerdict(90 * time.Second)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, logs)
	}
	var docs []struct {
		SamplesPerSec float64            `json:"samples_per_sec"`
		Loader        *stage.LoaderStats `json:"loader"`
	}
	if err := json.Unmarshal(r.out.Bytes(), &docs); err != nil || docs[0].Loader == nil || docs[0].Loader.Trip == nil {
		t.Fatalf("no loader batch_trip in the summary (%v):\n%s\nstderr:\n%s", err, r.out, logs)
	}
	return tripRun{verdict: v, samples: docs[0].SamplesPerSec, loader: docs[0].Loader}
}

// TestFloatImagesFromWorkers plants a Dataset whose workers send 4
// cameras of float32 images holding 0..255 (24 MiB a batch of 32) and its
// healthy control sending the uint8 frames (6 MiB, converted in the
// training step): the bytes a batch measured match the layout's (within
// 5 %), the float run's input advice names the float images with 4x and
// the fix, the uint8 run is not flagged and is measured faster.
func TestFloatImagesFromWorkers(t *testing.T) {
	testkit.Serial(t)
	const joints = 32 * 14 * 4
	runs := map[bool]tripRun{}
	for _, asFloat := range []bool{true, false} {
		args := []string{}
		if asFloat {
			args = append(args, "--float")
		}
		r := runTrip(t, "float_images.py", args...)
		runs[asFloat] = r
		tr := r.loader.Trip
		item := 1
		if asFloat {
			item = 4
		}
		want := float64(32*4*128*128*3*item + joints)
		if got := float64(tr.BytesPerBatch); math.Abs(got-want) > 0.05*want {
			t.Errorf("float=%v: %d bytes a batch measured, %.0f computed", asFloat, tr.BytesPerBatch, want)
		}
		t.Logf("float=%v: %.0f samples/s, %d bytes a batch, received in %.2f ms, %.1f batches/s (receive share %.1f %%); verdict: %s",
			asFloat, r.samples, tr.BytesPerBatch, float64(tr.ReceiveNs)/1e6, r.loader.BatchesPerSec,
			100*float64(tr.ReceiveNs)*r.loader.BatchesPerSec/1e9, r.verdict)
	}
	f, u := runs[true], runs[false]
	// The input's advice is the verdict's next step when the wait wins;
	// on a fast box the float batches' release after each wait can make
	// the untimed rest win (CI: 46 % of each step), and the wait is then
	// a cost named beside it ("also: waiting for data ...: workers send").
	input := f.verdict.Next
	if f.verdict.Kind != verdict.InputBound && f.verdict.Kind != verdict.ModerateInput {
		i := slices.IndexFunc(f.verdict.Also, func(c verdict.Cost) bool { return c.Stage == stage.DataWait })
		if i < 0 {
			t.Fatalf("float run: %s, want the input named", f.verdict)
		}
		input = f.verdict.Also[i].Text
	}
	for _, w := range []string{"workers send 24.0 MiB per batch to the main process", "4 image tensors float32 where uint8 would do: 4x the bytes",
		"batch['cam0']", "send uint8 and convert in the training step instead (batch['cam0'].float() on the device)"} {
		if !strings.Contains(input, w) {
			t.Errorf("float run's input advice %q lacks %q", input, w)
		}
	}
	if strings.Contains(u.verdict.String(), "uint8 would do") || strings.Contains(u.verdict.String(), "float32") {
		t.Errorf("uint8 control flagged: %s", u.verdict)
	}
	if u.samples <= f.samples {
		t.Errorf("uint8 control %.0f samples/s, not faster than the float run's %.0f", u.samples, f.samples)
	}
}

// logTrip logs what a run measured of its batches' trip.
func logTrip(t *testing.T, what string, r tripRun) {
	tr := r.loader.Trip
	t.Logf("%s: %.0f samples/s, %d bytes and %d tensors a batch, received in %.2f ms, %.1f batches/s (receive share %.1f %%); verdict: %s",
		what, r.samples, tr.BytesPerBatch, tr.TensorsPerBatch, float64(tr.ReceiveNs)/1e6, r.loader.BatchesPerSec,
		100*float64(tr.ReceiveNs)*r.loader.BatchesPerSec/1e9, r.verdict)
}

// TestManyTensorsFromWorkers plants a Dataset whose samples are 256
// tensors each (a batch crosses as 256 shared-memory tensors the main
// process rebuilds one by one) and its healthy control returning the same
// values as one tensor: the planted run's input advice names the main
// process's receive time and the fix; the control's does not, and it is
// measured faster.
func TestManyTensorsFromWorkers(t *testing.T) {
	testkit.Serial(t)
	many := runTrip(t, "many_tensors.py", "--tensors", "256")
	logTrip(t, "256 tensors a sample", many)
	one := runTrip(t, "many_tensors.py", "--tensors", "1")
	logTrip(t, "1 tensor a sample", one)
	if got := many.loader.Trip.TensorsPerBatch; got != 256 {
		t.Errorf("%d tensors a batch measured, want 256", got)
	}
	for _, w := range []string{"the main process spends", "receiving each batch from the workers", "in 256 tensors or arrays", "stack per-sample tensors"} {
		if !strings.Contains(many.verdict.Next, w) {
			t.Errorf("planted run's advice %q lacks %q", many.verdict.Next, w)
		}
	}
	if strings.Contains(one.verdict.String(), "receiving each batch") {
		t.Errorf("1-tensor control flagged: %s", one.verdict)
	}
	if one.samples <= many.samples {
		t.Errorf("1-tensor control %.0f samples/s, not faster than the planted run's %.0f", one.samples, many.samples)
	}
}
