package threads

import (
	"math"
	"testing"

	"github.com/pipetop/pipetop/monitor/snapshot"
)

// TestWorkerCores: the loader's worker processes count every thread
// (their first thread is a worker, the decoder's threads intra-op); the
// trainer's own threads and a fresh thread do not.
func TestWorkerCores(t *testing.T) {
	th := &snapshot.Threads{UsableCores: 2, Threads: []snapshot.Thread{
		{PID: 10, TID: 10, Role: "training", CPU: 60, Wait: 30},
		{PID: 10, TID: 11, Role: "intra-op", CPU: 40, Wait: 10},
		{PID: 20, TID: 20, Role: "worker", CPU: 30, Wait: 20},
		{PID: 20, TID: 21, Role: "intra-op", CPU: 25, Wait: 5},
		{PID: 21, TID: 21, Role: "worker", CPU: 20},
		{PID: 21, TID: 22, Role: "intra-op", Fresh: true},
	}}
	c := hostCPU(th, &snapshot.CPU{})
	if c == nil || math.Abs(c.WorkerCores-0.75) > 1e-9 {
		t.Fatalf("worker cores of %+v, want 0.75", c)
	}
	if math.Abs(c.Used-1.75) > 1e-9 || c.TrainingCPU != 0.6 {
		t.Errorf("used %v, training %v", c.Used, c.TrainingCPU)
	}
}
