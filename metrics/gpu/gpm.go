package gpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpumetric"
)

// gpmMetrics are the GPM metric ids read each sample, in the order of the
// Device fields they fill.
var gpmMetrics = [...]nvml.GpmMetricId{
	nvml.GPM_METRIC_SM_UTIL,
	nvml.GPM_METRIC_SM_OCCUPANCY,
	nvml.GPM_METRIC_ANY_TENSOR_UTIL,
	nvml.GPM_METRIC_DRAM_BW_UTIL,
}

// gpmState holds the two GPM samples a metric needs: the previous one and
// the one taken now.
type gpmState struct {
	ok        bool
	prev, cur nvml.GpmSample
	havePrev  bool
	req       nvml.GpmMetricsGetType
}

// newGPM allocates the two samples of a GPM-capable device; on failure the
// device reads as GPM-unsupported.
func (s *Sampler) newGPM(d *devState) gpmState {
	s.enter("nvmlGpmSampleAlloc", d.index)
	a, r := s.lib.GpmSampleAlloc()
	if r != nvml.SUCCESS {
		return gpmState{}
	}
	b, r := s.lib.GpmSampleAlloc()
	if r != nvml.SUCCESS {
		a.Free()
		return gpmState{}
	}
	return gpmState{ok: true, prev: a, cur: b}
}

// free releases the samples.
func (g *gpmState) free() {
	if g.ok {
		g.prev.Free()
		g.cur.Free()
		g.ok = false
	}
}

// readGPM takes a GPM sample and, from the second one on, computes the
// metrics over the interval since the previous sample.
func (s *Sampler) readGPM(rd *reader) {
	g := &rd.d.gpm
	out := rd.out
	fields := [...]*metrics.Value{&out.Readings[gpumetric.SMActivity], &out.Readings[gpumetric.SMOccupancy], &out.Readings[gpumetric.TensorActive], &out.Readings[gpumetric.DRAMActive]}
	if !g.ok {
		for _, f := range fields {
			*f = metrics.Unsupported(SourceGPM)
		}
		return
	}
	for _, f := range fields {
		*f = metrics.Pending(SourceGPM)
	}
	if rd.dead {
		return
	}
	var r nvml.Return
	if rd.d.mig {
		s.enter("nvmlGpmMigSampleGet", rd.d.index)
		r = g.cur.MigGet(rd.d.parent, rd.d.gi)
	} else {
		s.enter("nvmlGpmSampleGet", rd.d.index)
		r = g.cur.Get(rd.d.h)
	}
	if rd.check("nvmlGpmSampleGet", r) != metrics.OK {
		g.havePrev = false
		for _, f := range fields {
			*f = metrics.Failure(SourceGPM)
		}
		return
	}
	if g.havePrev {
		s.gpmMetricsGet(rd, fields[:])
	}
	g.prev, g.cur = g.cur, g.prev
	g.havePrev = true
}

// gpmMetricsGet computes the metrics between g.prev and g.cur.
func (s *Sampler) gpmMetricsGet(rd *reader, fields []*metrics.Value) {
	g := &rd.d.gpm
	g.req = nvml.GpmMetricsGetType{NumMetrics: uint32(len(gpmMetrics)), Sample1: g.prev, Sample2: g.cur}
	for i, id := range gpmMetrics {
		g.req.Metrics[i].MetricId = uint32(id)
	}
	s.enter("nvmlGpmMetricsGet", rd.d.index)
	r := s.lib.GpmMetricsGet(&g.req)
	if rd.check("nvmlGpmMetricsGet", r) != metrics.OK {
		for _, f := range fields {
			*f = metrics.Failure(SourceGPM)
		}
		return
	}
	for i, f := range fields {
		m := g.req.Metrics[i]
		switch nvml.Return(m.NvmlReturn) {
		case nvml.SUCCESS:
			*f = metrics.Of(m.Value, SourceGPM)
		case nvml.ERROR_NOT_SUPPORTED:
			*f = metrics.Unsupported(SourceGPM)
		default:
			*f = metrics.Failure(SourceGPM)
		}
	}
}
