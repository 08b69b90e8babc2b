package torch

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pipetop/pipetop/internal/testkit"
)

// TestDistGlooReplicas runs two ranks of a Gloo group in this process (two
// goroutines, two policies with different seeds and different data): after
// joining and after every averaged step the replicas' parameters are
// bitwise identical, and the stop votes add up on every rank.
func TestDistGlooReplicas(t *testing.T) {
	lib := openLib(t)
	port := testkit.FreePort(t)
	const world, steps = 2, 3
	sums := make([][]uint64, world)
	votes := make([][]int, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := newPolicy(t, lib, tinyConfig(int64(10+r)))
			d, err := lib.NewDist(DistOptions{MasterAddr: "127.0.0.1", MasterPort: port, Rank: r, WorldSize: world,
				DeviceIndex: -1, Timeout: 20 * time.Second, BucketBytes: 64 << 10})
			if err != nil {
				errs[r] = err
				return
			}
			defer d.Close()
			if info := d.Info(); info.Backend != "gloo" || info.Rank != r || info.WorldSize != world {
				t.Errorf("rank %d: info %+v", r, info)
			}
			if errs[r] = p.Join(d, 0); errs[r] != nil {
				return
			}
			data := syntheticBatch(p.Info().Config, 2, uint64(100+r))
			for s := range steps {
				sum, _ := p.Checksum()
				sums[r] = append(sums[r], sum)
				for _, f := range []func() error{
					func() error { return p.Upload(data.images, data.state, data.action, 2) },
					p.Forward, p.Backward,
				} {
					if errs[r] = f(); errs[r] != nil {
						return
					}
				}
				n, err := p.AllReduceGrads(d, r == 1 && s == steps-1)
				if errs[r] = err; err != nil {
					return
				}
				votes[r] = append(votes[r], n)
				if errs[r] = p.OptimStep(); errs[r] != nil {
					return
				}
			}
			sum, _ := p.Checksum()
			sums[r] = append(sums[r], sum)
			errs[r] = d.Barrier()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for i := range sums[0] {
		if sums[0][i] != sums[1][i] {
			t.Fatalf("after %d steps: checksums differ: rank 0 %016x, rank 1 %016x", i, sums[0][i], sums[1][i])
		}
	}
	if sums[0][0] == sums[0][steps] {
		t.Fatal("parameters did not change in training")
	}
	for r := range world {
		if got := votes[r]; got[0] != 0 || got[steps-1] != 1 {
			t.Fatalf("rank %d: votes %v, want 0 ... 1", r, got)
		}
	}
}

// TestDistMissingRank: a group of two where only rank 0 turns up fails
// within the timeout and names rank 1.
func TestDistMissingRank(t *testing.T) {
	lib := openLib(t)
	start := time.Now()
	_, err := lib.NewDist(DistOptions{MasterAddr: "127.0.0.1", MasterPort: testkit.FreePort(t), Rank: 0, WorldSize: 2,
		DeviceIndex: -1, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "rank(s) 1 did not join") {
		t.Fatalf("NewDist with a missing rank: %v", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %s with a 1s timeout", el)
	}
}

func TestDistOptionErrors(t *testing.T) {
	lib := openLib(t)
	for _, tc := range []struct {
		o    DistOptions
		want string
	}{
		{DistOptions{MasterPort: 1, Rank: 2, WorldSize: 2}, "rank 2"},
		{DistOptions{MasterPort: 1, Rank: 0, WorldSize: 0}, "world_size 0"},
		{DistOptions{MasterPort: 0, Rank: 0, WorldSize: 1}, "master_port 0"},
		{DistOptions{Backend: "mpi", MasterPort: 1, WorldSize: 1}, "backend \"mpi\""},
		{DistOptions{Backend: "nccl", MasterPort: testkit.FreePort(t), WorldSize: 1, DeviceIndex: -1}, "nccl"},
	} {
		if _, err := lib.NewDist(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewDist(%+v) = %v, want an error about %s", tc.o, err, tc.want)
		}
	}
}
