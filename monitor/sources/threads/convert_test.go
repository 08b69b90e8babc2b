package threads

import (
	"math"
	"testing"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/metrics/verdict"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// TestPipetopThreadsAreNotTheRuns: the Python publisher's own threads
// (role pipetop, from their "pipetop-..." names) count in no CPU reading.
// The readings are the imagenet run on 2 cores: the other threads
// used 15.2 % of a core beside a training thread on one all the time,
// 4 points of it pipetop's stack sampler, which kept training-thread-bound
// (at most 15 % of the training thread's CPU) from firing.
func TestPipetopThreadsAreNotTheRuns(t *testing.T) {
	th := &snapshot.Threads{UsableCores: 2, Threads: []host.ThreadInfo{
		{PID: 10, TID: 10, Name: "python3", Role: host.RoleTraining, CPU: 100, Wait: 0, Switches: 30, Preempted: 12},
		{PID: 10, TID: 11, Name: "python3", Role: host.RoleIntraOp, CPU: 11.2, Wait: 1},
		{PID: 10, TID: 12, Name: "pipetop-stacks", Role: host.RolePipetop, CPU: 4, Wait: 30},
		{PID: 10, TID: 13, Name: "pipetop-hotcode", Role: host.RolePipetop, CPU: 0.1},
	}}
	c := hostCPU(th, &snapshot.CPU{})
	if c == nil {
		t.Fatal("no readings")
	}
	if math.Abs(c.Others-0.112) > 1e-9 || math.Abs(c.Used-1.112) > 1e-9 || math.Abs(c.Demand-1.122) > 1e-9 {
		t.Errorf("others %.4f, used %.4f, demand %.4f: want 0.112, 1.112 and 1.122 (pipetop's threads left out)", c.Others, c.Used, c.Demand)
	}
	if c.Others > verdict.OtherThreadsIdle*c.TrainingCPU {
		t.Errorf("others %.3f over the training-thread-bound limit %.3f", c.Others, verdict.OtherThreadsIdle*c.TrainingCPU)
	}
	if c.TrainingSwitches != 30 || c.TrainingPreempted != 12 {
		t.Errorf("training switches %v, preempted %v: want 30 and 12", c.TrainingSwitches, c.TrainingPreempted)
	}
	for _, p := range c.Pools {
		if p.Role == host.RolePipetop {
			t.Errorf("pools %+v name pipetop's threads", c.Pools)
		}
	}
	// Only pipetop's threads read so far: nothing to judge.
	only := &snapshot.Threads{Threads: []host.ThreadInfo{{TID: 12, Name: "pipetop-stacks", Role: host.RolePipetop, CPU: 4}}}
	if c := hostCPU(only, &snapshot.CPU{}); c != nil {
		t.Errorf("readings of pipetop's threads alone = %+v, want none", c)
	}
}

// TestWorkerCores: the loader's worker processes count every thread
// (their first thread is a worker, the decoder's threads intra-op); the
// trainer's own threads and a fresh thread do not.
func TestWorkerCores(t *testing.T) {
	th := &snapshot.Threads{UsableCores: 2, Threads: []host.ThreadInfo{
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
