package monitor

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
)

// Registered returns the registered sources over the real samplers, in
// sampling order. Adding a source is one line here (and its package under
// sources/). noGPU leaves NVML unloaded.
func Registered(noGPU bool) []source.Source {
	srcs := []source.Source{
		cpu.New(host.NewCPUSampler("")),
		procs.New(host.NewProcSampler(0, "")),
	}
	if !noGPU {
		s := mgpu.Open(nvml.New(), mgpu.Options{AllProcesses: true})
		srcs = append(srcs, gpu.New(s, s.Close))
		srcs = append(srcs, gpuprocs.New(s, host.NewPIDReader(""), os.Geteuid() == 0))
	}
	return srcs
}
