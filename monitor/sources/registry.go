// Package sources is the registry of the monitor's host sources: every
// source pipetop samples, in sampling order, and the snapshot part of each
// for reading recordings back. Its table is the sources that need no NVML
// (package host, which pipetrain records too) followed by those that do
// (gpuTable below). It links NVML; add a source that needs none to package
// host instead.
package sources

import (
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	mgpu "github.com/pipetop/pipetop/metrics/gpu"
	mhost "github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/gpu"
	"github.com/pipetop/pipetop/monitor/sources/gpuprocs"
	"github.com/pipetop/pipetop/monitor/sources/host"
)

// gpuRow is one source that needs NVML: its part of the snapshot and how
// to open it over the GPU sampler the rows share.
type gpuRow struct {
	part source.Part
	open func(gpus *mgpu.Sampler) source.Source
}

// gpuTable is the sources that need NVML, in sampling order, after those
// of package host. They share one GPU sampler, so NVML is initialised
// once; the gpu source samples and closes it, the ones after it read it.
// A source of its own package is a row here; one written as a file of
// this package appends its row from that file's init.
var gpuTable = []gpuRow{
	{gpu.Part, func(g *mgpu.Sampler) source.Source { return gpu.New(g, g.Close) }},
	{gpuprocs.Part, func(g *mgpu.Sampler) source.Source {
		return gpuprocs.New(g, mhost.NewPIDReader(""), os.Geteuid() == 0)
	}},
}

// Registered returns the registered sources over the real samplers, in
// sampling order. noGPU leaves NVML unloaded: the sources of package host
// only.
func Registered(noGPU bool) []source.Source {
	srcs := host.Open()
	if noGPU {
		return srcs
	}
	g := mgpu.Open(nvml.New(), mgpu.Options{AllProcesses: true})
	for _, r := range gpuTable {
		srcs = append(srcs, r.open(g))
	}
	return srcs
}

// Parts are the snapshot parts of every source Registered can return, in
// sampling order, for reading recordings back without opening any sampler.
func Parts() []source.Part {
	parts := host.Parts()
	for _, r := range gpuTable {
		parts = append(parts, r.part)
	}
	return parts
}
