package gpu

import (
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/pipetop/pipetop/metrics"
	"github.com/pipetop/pipetop/metrics/gpumetric"
)

// devState is what the sampler keeps per device between samples.
type devState struct {
	h               nvml.Device
	parent          nvml.Device // MIG only
	index, migIndex int
	gi, ci          int
	mig             bool
	name, uuid      string
	openErr         string // set when the handle could not be opened
	gpm             gpmState
	lastSeen        uint64      // µs timestamp for process utilization
	migs            []*devState // a GPU's MIG devices, for its process list
}

// openDevice reads a full GPU's static facts.
func (s *Sampler) openDevice(h nvml.Device, i int) *devState {
	d := &devState{h: h, index: i, migIndex: -1, gi: -1, ci: -1}
	s.enter("nvmlDeviceGetName", i)
	d.name, _ = h.GetName()
	s.enter("nvmlDeviceGetUUID", i)
	d.uuid, _ = h.GetUUID()
	s.enter("nvmlGpmQueryDeviceSupport", i)
	if sup, r := h.GpmQueryDeviceSupport(); r == nvml.SUCCESS && sup.IsSupportedDevice != 0 {
		d.gpm = s.newGPM(d)
	}
	return d
}

// openMIG lists the MIG devices of a GPU in MIG mode.
func (s *Sampler) openMIG(p *devState) []*devState {
	s.enter("nvmlDeviceGetMigMode", p.index)
	cur, _, r := p.h.GetMigMode()
	if r != nvml.SUCCESS || cur != nvml.DEVICE_MIG_ENABLE {
		return nil
	}
	s.enter("nvmlDeviceGetMaxMigDeviceCount", p.index)
	n, r := p.h.GetMaxMigDeviceCount()
	if r != nvml.SUCCESS {
		return nil
	}
	var out []*devState
	for j := range n {
		s.enter("nvmlDeviceGetMigDeviceHandleByIndex", p.index)
		h, r := p.h.GetMigDeviceHandleByIndex(j)
		if r != nvml.SUCCESS {
			continue // empty slot
		}
		d := &devState{h: h, parent: p.h, index: p.index, migIndex: j, mig: true}
		s.enter("nvmlDeviceGetName", p.index)
		d.name, _ = h.GetName()
		s.enter("nvmlDeviceGetUUID", p.index)
		d.uuid, _ = h.GetUUID()
		s.enter("nvmlDeviceGetGpuInstanceId", p.index)
		if d.gi, r = h.GetGpuInstanceId(); r != nvml.SUCCESS {
			d.gi = -1
		}
		s.enter("nvmlDeviceGetComputeInstanceId", p.index)
		if d.ci, r = h.GetComputeInstanceId(); r != nvml.SUCCESS {
			d.ci = -1
		}
		if p.gpm.ok && d.gi >= 0 {
			d.gpm = s.newGPM(d)
		}
		out = append(out, d)
	}
	return out
}

// reader reads one device's values, remembering the first error.
type reader struct {
	s   *Sampler
	d   *devState
	out *Device
	// dead is set after a fatal error: the remaining calls are skipped.
	dead bool
}

// check converts a return code to a value state and records failures.
func (rd *reader) check(op string, r nvml.Return) metrics.State {
	switch {
	case r == nvml.SUCCESS:
		return metrics.OK
	case r == nvml.ERROR_NOT_SUPPORTED || r == nvml.ERROR_FUNCTION_NOT_FOUND:
		return metrics.NotSupported
	}
	if rd.out.Err == "" {
		rd.out.Err = op + ": " + describe(r)
		if fatalForDevice(r) {
			rd.out.Err = describe(r)
		}
	}
	if fatalForDevice(r) {
		rd.dead = true
	}
	return metrics.Failed
}

// u32 reads one uint32 metric, scaled, into a Value.
func (rd *reader) u32(op string, src string, scale float64, f func() (uint32, nvml.Return)) metrics.Value {
	if rd.dead {
		return metrics.Failure(src)
	}
	rd.s.enter(op, rd.d.index)
	v, r := f()
	st := rd.check(op, r)
	return metrics.Value{V: float64(v) * scale, Source: src, State: st}
}

// readDevice reads every per-sample value of d.
func (s *Sampler) readDevice(d *devState, now time.Time, pids []int) Device {
	out := Device{Index: d.index, MIG: d.mig, MIGIndex: d.migIndex, GPUInstance: d.gi,
		ComputeInstance: d.ci, Name: d.name, UUID: d.uuid, Err: d.openErr}
	if d.openErr != "" {
		return out
	}
	rd := &reader{s: s, d: d, out: &out}
	s.readUtil(rd)
	s.readMemory(rd)
	h := d.h
	out.Readings[gpumetric.Power] = rd.u32("nvmlDeviceGetPowerUsage", SourceNVML, 1e-3, h.GetPowerUsage)
	out.Readings[gpumetric.PowerLimit] = rd.u32("nvmlDeviceGetEnforcedPowerLimit", SourceNVML, 1e-3, h.GetEnforcedPowerLimit)
	out.Readings[gpumetric.Temperature] = rd.u32("nvmlDeviceGetTemperature", SourceNVML, 1, func() (uint32, nvml.Return) {
		return h.GetTemperature(nvml.TEMPERATURE_GPU)
	})
	out.Readings[gpumetric.SMClock] = rd.u32("nvmlDeviceGetClockInfo", SourceNVML, 1, func() (uint32, nvml.Return) {
		return h.GetClockInfo(nvml.CLOCK_SM)
	})
	out.Readings[gpumetric.MemClock] = rd.u32("nvmlDeviceGetClockInfo", SourceNVML, 1, func() (uint32, nvml.Return) {
		return h.GetClockInfo(nvml.CLOCK_MEM)
	})
	out.Readings[gpumetric.PCIeRx] = rd.u32("nvmlDeviceGetPcieThroughput", SourceNVML, 1024, func() (uint32, nvml.Return) {
		return h.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES)
	})
	out.Readings[gpumetric.PCIeTx] = rd.u32("nvmlDeviceGetPcieThroughput", SourceNVML, 1024, func() (uint32, nvml.Return) {
		return h.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES)
	})
	s.readThrottle(rd)
	s.readGPM(rd)
	s.readProcesses(rd, now, pids)
	return out
}

func (s *Sampler) readUtil(rd *reader) {
	if rd.dead {
		return
	}
	s.enter("nvmlDeviceGetUtilizationRates", rd.d.index)
	u, r := rd.d.h.GetUtilizationRates()
	st := rd.check("nvmlDeviceGetUtilizationRates", r)
	rd.out.Readings[gpumetric.KernelActive] = metrics.Value{V: float64(u.Gpu), Source: SourceKernelActive, State: st}
	rd.out.Readings[gpumetric.MemActive] = metrics.Value{V: float64(u.Memory), Source: SourceMemActive, State: st}
}

func (s *Sampler) readMemory(rd *reader) {
	if rd.dead {
		rd.out.Readings[gpumetric.MemUsed], rd.out.Readings[gpumetric.MemTotal] = metrics.Failure(SourceNVML), metrics.Failure(SourceNVML)
		return
	}
	s.enter("nvmlDeviceGetMemoryInfo", rd.d.index)
	m, r := rd.d.h.GetMemoryInfo()
	st := rd.check("nvmlDeviceGetMemoryInfo", r)
	rd.out.Readings[gpumetric.MemUsed] = metrics.Value{V: float64(m.Used), Source: SourceNVML, State: st}
	rd.out.Readings[gpumetric.MemTotal] = metrics.Value{V: float64(m.Total), Source: SourceNVML, State: st}
}

func (s *Sampler) readThrottle(rd *reader) {
	rd.out.Throttle = Throttle{Source: SourceNVML, State: metrics.Failed}
	if rd.dead {
		return
	}
	s.enter("nvmlDeviceGetCurrentClocksEventReasons", rd.d.index)
	v, r := rd.d.h.GetCurrentClocksEventReasons()
	if r == nvml.ERROR_FUNCTION_NOT_FOUND { // drivers before 535
		s.enter("nvmlDeviceGetCurrentClocksThrottleReasons", rd.d.index)
		v, r = rd.d.h.GetCurrentClocksThrottleReasons()
	}
	rd.out.Throttle.State = rd.check("nvmlDeviceGetCurrentClocksEventReasons", r)
	rd.out.Throttle.Reasons = Reasons(v)
}
