package trainer

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/pipetop/pipetop/ipc"
)

// Rank is this process's place in a data-parallel run, read from the
// environment torchrun (and `pipetrain train --nproc`) sets.
type Rank struct {
	Rank       int    // RANK: 0..World-1
	World      int    // WORLD_SIZE; 1 for a single process
	LocalRank  int    // LOCAL_RANK: rank on this host (picks the CUDA device)
	MasterAddr string // MASTER_ADDR: host of rank 0's rendezvous store
	MasterPort int    // MASTER_PORT
	Run        string // TORCHELASTIC_RUN_ID, else MASTER_ADDR:MASTER_PORT
}

// Single is the rank of a run that is not distributed.
var Single = Rank{World: 1}

// Distributed reports whether the run has more than one rank.
func (r Rank) Distributed() bool { return r.World > 1 }

// Rank environment variable names (torchrun's).
const (
	EnvRank       = "RANK"
	EnvWorldSize  = "WORLD_SIZE"
	EnvLocalRank  = "LOCAL_RANK"
	EnvMasterAddr = "MASTER_ADDR"
	EnvMasterPort = "MASTER_PORT"
	EnvRunID      = "TORCHELASTIC_RUN_ID"
)

// RankFromEnv reads the rank variables through getenv. Without
// WORLD_SIZE the process is a single rank 0 (Single); with it, RANK and
// MASTER_PORT are required and every value is checked, the error naming
// the variable.
func RankFromEnv(getenv func(string) string) (Rank, error) {
	ws := getenv(EnvWorldSize)
	if ws == "" {
		return Single, nil
	}
	num := func(name, v string, lo, hi int) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%s=%q: want an integer in %d..%d", name, v, lo, hi)
		}
		return n, nil
	}
	var r Rank
	var err error
	if r.World, err = num(EnvWorldSize, ws, 1, 1<<20); err != nil {
		return Rank{}, err
	}
	if r.Rank, err = num(EnvRank, getenv(EnvRank), 0, r.World-1); err != nil {
		return Rank{}, err
	}
	if lr := getenv(EnvLocalRank); lr != "" {
		if r.LocalRank, err = num(EnvLocalRank, lr, 0, r.World-1); err != nil {
			return Rank{}, err
		}
	} else {
		r.LocalRank = r.Rank
	}
	r.MasterAddr = getenv(EnvMasterAddr)
	if r.MasterAddr == "" {
		r.MasterAddr = "127.0.0.1"
	}
	if r.World > 1 || getenv(EnvMasterPort) != "" {
		if r.MasterPort, err = num(EnvMasterPort, getenv(EnvMasterPort), 1, 65535); err != nil {
			return Rank{}, err
		}
	}
	r.Run = getenv(EnvRunID)
	if r.Run == "" && r.World > 1 {
		r.Run = net.JoinHostPort(r.MasterAddr, strconv.Itoa(r.MasterPort))
	}
	if len(r.Run) > ipc.MaxRunLen {
		return Rank{}, fmt.Errorf("%s: %d bytes, want at most %d (the run id every rank's pipetop hello carries)", EnvRunID, len(r.Run), ipc.MaxRunLen)
	}
	return r, nil
}

// Env is the rank's variables in os/exec form (the inverse of
// RankFromEnv).
func (r Rank) Env() []string {
	return []string{
		EnvRank + "=" + strconv.Itoa(r.Rank),
		EnvWorldSize + "=" + strconv.Itoa(r.World),
		EnvLocalRank + "=" + strconv.Itoa(r.LocalRank),
		EnvMasterAddr + "=" + r.MasterAddr,
		EnvMasterPort + "=" + strconv.Itoa(r.MasterPort),
		EnvRunID + "=" + r.Run,
	}
}

// DistConfig tunes the process group of a multi-rank run.
type DistConfig struct {
	Backend     string        // "gloo", "nccl" or "" (auto)
	Timeout     time.Duration // rendezvous and collective timeout
	BucketBytes int64         // gradient bucket size (0: 25 MiB)
}

// DefaultDistTimeout is --dist-timeout's default.
const DefaultDistTimeout = 5 * time.Minute
