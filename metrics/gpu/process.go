package gpu

import (
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/pipetop/pipetop/metrics"
)

// valueNotAvailable is NVML's marker for an unknown per-process memory use
// (e.g. under some virtualisation or without permission).
const valueNotAvailable = ^uint64(0)

// procLists is one device's process lists and utilization samples as NVML
// returned them in one sample.
type procLists struct {
	compute, graphics []nvml.ProcessInfo
	cst, gst          metrics.State
	samples           []nvml.ProcessUtilizationSample
	ust               metrics.State
}

// readProcesses fills one Process per watched pid (memory from the compute
// process list, SM/memory activity from the process utilization samples
// newer than the device's last-seen timestamp) and, with
// Options.AllProcesses, every process NVML lists on the device.
func (s *Sampler) readProcesses(rd *reader, now time.Time, pids []int) {
	out := rd.out
	out.Processes = out.Processes[:0]
	out.Running = out.Running[:0]
	all := s.all && !rd.d.mig // a MIG device's processes are listed on its parent
	out.ProcList, out.ProcUtil = metrics.Missing, metrics.Missing
	if len(pids) == 0 && !all {
		return
	}
	for _, pid := range pids {
		out.Processes = append(out.Processes, Process{PID: pid,
			Memory: metrics.Failure(SourceProcessList),
			SMUtil: metrics.Failure(SourceProcessUtil), MemUtil: metrics.Failure(SourceProcessUtil)})
	}
	if rd.dead {
		out.ProcList, out.ProcUtil = metrics.Failed, metrics.Failed
		return
	}
	l := s.readProcLists(rd, now, len(pids) > 0, all)
	fillWatched(out.Processes, l)
	if all {
		out.ProcList, out.ProcUtil = l.cst, l.ust
		out.Running = running(rd.d, l)
	}
}

// readProcLists makes the NVML calls: failures are recorded as the
// device's error only when watched pids depend on them, so that a driver
// hiding other users' processes does not mark the whole device failed.
func (s *Sampler) readProcLists(rd *reader, now time.Time, watched, all bool) procLists {
	var l procLists
	d := rd.d
	classify := func(op string, r nvml.Return) metrics.State {
		if watched {
			return rd.check(op, r)
		}
		return stateOf(r)
	}
	s.enter("nvmlDeviceGetComputeRunningProcesses", d.index)
	var r nvml.Return
	l.compute, r = d.h.GetComputeRunningProcesses()
	l.cst = classify("nvmlDeviceGetComputeRunningProcesses", r)
	if all {
		s.enter("nvmlDeviceGetGraphicsRunningProcesses", d.index)
		l.graphics, r = d.h.GetGraphicsRunningProcesses()
		l.gst = stateOf(r)
	}
	if d.lastSeen == 0 {
		d.lastSeen = uint64(now.Add(-time.Second).UnixMicro())
	}
	s.enter("nvmlDeviceGetProcessUtilization", d.index)
	l.samples, r = d.h.GetProcessUtilization(d.lastSeen)
	l.ust = metrics.OK // NOT_FOUND: no process ran since lastSeen, which is 0 %
	if r != nvml.ERROR_NOT_FOUND {
		l.ust = classify("nvmlDeviceGetProcessUtilization", r)
	}
	if l.ust != metrics.OK {
		l.samples = nil
	}
	for _, smp := range l.samples {
		d.lastSeen = max(d.lastSeen, smp.TimeStamp)
	}
	return l
}

// stateOf classifies r without recording it as the device's error.
func stateOf(r nvml.Return) metrics.State {
	switch r {
	case nvml.SUCCESS:
		return metrics.OK
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
		return metrics.NotSupported
	}
	return metrics.Failed
}

// fillWatched sets the watched pids' memory and activity from l.
func fillWatched(ps []Process, l procLists) {
	for i := range ps {
		p := &ps[i]
		p.Memory = metrics.Value{Source: SourceProcessList, State: l.cst}
		if l.cst == metrics.OK {
			p.Memory = metrics.Of(0, SourceProcessList)
			for _, info := range l.compute {
				if int(info.Pid) == p.PID {
					p.OnGPU = true
					p.Memory = memoryOf(info)
				}
			}
		}
		p.SMUtil = metrics.Value{Source: SourceProcessUtil, State: l.ust}
		p.MemUtil = p.SMUtil
		if l.ust != metrics.OK {
			continue
		}
		sm, mem, n := utilOf(l.samples, p.PID)
		if n > 0 {
			p.OnGPU = true
		}
		p.SMUtil = metrics.Of(sm, SourceProcessUtil)
		p.MemUtil = metrics.Of(mem, SourceProcessUtil)
	}
}

func memoryOf(info nvml.ProcessInfo) metrics.Value {
	if info.UsedGpuMemory == valueNotAvailable {
		return metrics.Unsupported(SourceProcessList)
	}
	return metrics.Of(float64(info.UsedGpuMemory), SourceProcessList)
}

// utilOf averages pid's samples; n is how many there were.
func utilOf(samples []nvml.ProcessUtilizationSample, pid int) (sm, mem, n float64) {
	for _, smp := range samples {
		if int(smp.Pid) == pid {
			sm, mem, n = sm+float64(smp.SmUtil), mem+float64(smp.MemUtil), n+1
		}
	}
	if n > 0 {
		sm, mem = sm/n, mem/n
	}
	return sm, mem, n
}

// running merges the compute and graphics lists into one entry per pid
// and MIG instance, with the process's activity where the driver gives it.
func running(d *devState, l procLists) []RunningProcess {
	var out []RunningProcess
	add := func(info nvml.ProcessInfo, compute bool) {
		mig := d.migOf(info)
		for i := range out {
			if out[i].PID == int(info.Pid) && out[i].MIGIndex == mig {
				out[i].Compute = out[i].Compute || compute
				out[i].Graphics = out[i].Graphics || !compute
				return
			}
		}
		p := RunningProcess{PID: int(info.Pid), MIGIndex: mig, Compute: compute, Graphics: !compute,
			Memory: memoryOf(info), SMUtil: metrics.Value{Source: SourceProcessUtil, State: l.ust}}
		p.MemUtil = p.SMUtil
		if l.ust == metrics.OK {
			sm, mem, _ := utilOf(l.samples, p.PID)
			p.SMUtil, p.MemUtil = metrics.Of(sm, SourceProcessUtil), metrics.Of(mem, SourceProcessUtil)
		}
		out = append(out, p)
	}
	for _, info := range l.compute {
		add(info, true)
	}
	for _, info := range l.graphics {
		add(info, false)
	}
	return out
}

// migOf is the MIG slot a process of a GPU in MIG mode runs in, from its
// GPU and compute instance ids; -1 for a GPU not in MIG mode or an
// instance not known.
func (d *devState) migOf(info nvml.ProcessInfo) int {
	for _, m := range d.migs {
		if m.gi == int(info.GpuInstanceId) && (m.ci < 0 || m.ci == int(info.ComputeInstanceId)) {
			return m.migIndex
		}
	}
	return -1
}
