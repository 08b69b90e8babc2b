// Package host is the table of the monitor's sources that need no NVML:
// the machine's CPU, the trainer's process tree and its threads, in
// sampling order. pipetrain records every source of it (Open) and links
// no NVML; monitor/sources samples them first, then the sources that do
// need NVML.
//
// A source that needs no NVML is added here, so that pipetop and
// pipetrain --record both sample it and replay loads it back: a source of
// its own package under monitor/sources is a row of table; one written as
// a file of this package appends its row to table from that file's init
// (after the rows below, in file name order). docs/architecture.md has
// the whole recipe.
package host

import (
	mhost "github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/source"
	"github.com/pipetop/pipetop/monitor/sources/cpu"
	"github.com/pipetop/pipetop/monitor/sources/procs"
	"github.com/pipetop/pipetop/monitor/sources/threads"
)

// row is one source of the table: its part of the snapshot, for reading
// recordings back without opening anything, and how to open it over the
// real samplers.
type row struct {
	part source.Part
	open func() source.Source
}

// table is the sources that need no NVML, in sampling order.
var table = []row{
	{cpu.Part, func() source.Source { return cpu.New(mhost.NewCPUSampler("")) }},
	{procs.Part, func() source.Source { return procs.New(mhost.NewProcSampler(0, "")) }},
	{threads.Part, func() source.Source { return threads.New(mhost.NewThreadSampler("")) }},
}

// Open returns every source of the table over the real samplers, in
// sampling order.
func Open() []source.Source {
	srcs := make([]source.Source, len(table))
	for i, r := range table {
		srcs[i] = r.open()
	}
	return srcs
}

// Parts are the snapshot parts of the table's sources, in sampling order.
func Parts() []source.Part {
	parts := make([]source.Part, len(table))
	for i, r := range table {
		parts[i] = r.part
	}
	return parts
}
