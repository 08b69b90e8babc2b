// Package sources is the registry of the monitor's host sources: every
// source pipetop samples, in sampling order, and the snapshot part of each
// for reading recordings back. It links NVML (through the gpu sources);
// pipetrain, which must not, builds the host sources it records itself.
package sources

import (
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/cpu"
	"github.com/pipetop/pipetop/monitor/sources/gpu"
	"github.com/pipetop/pipetop/monitor/sources/gpuprocs"
	"github.com/pipetop/pipetop/monitor/sources/procs"
	"github.com/pipetop/pipetop/monitor/sources/threads"
)

// Registered returns the registered sources over the real samplers, in
// sampling order. Adding a source is one line here and one in Parts (and
// its package under sources/, and its field in monitor/snapshot). noGPU
// leaves NVML unloaded.
func Registered(noGPU bool) []source.Source {
	srcs := []source.Source{
		cpu.New(host.NewCPUSampler("")),
		procs.New(host.NewProcSampler(0, "")),
		threads.New(host.NewThreadSampler("")),
	}
	if !noGPU {
		s := mgpu.Open(nvml.New(), mgpu.Options{AllProcesses: true})
		srcs = append(srcs, gpu.New(s, s.Close))
		srcs = append(srcs, gpuprocs.New(s, host.NewPIDReader(""), os.Geteuid() == 0))
	}
	return srcs
}

// Parts are the snapshot parts of every source Registered can return, for
// reading recordings back without opening any sampler.
func Parts() []source.Part {
	return []source.Part{cpu.Part, procs.Part, threads.Part, gpu.Part, gpuprocs.Part}
}
