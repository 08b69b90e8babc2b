package gpu

import (
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/pipetop/pipetop/metrics"
)

// valueNotAvailable is NVML's marker for an unknown per-process memory use
// (e.g. under some virtualisation or without permission).
const valueNotAvailable = ^uint64(0)

// readProcesses fills one Process per watched pid: memory from the compute
// process list and SM/memory activity from the process utilization samples
// newer than the device's last-seen timestamp.
func (s *Sampler) readProcesses(rd *reader, now time.Time, pids []int) {
	out := rd.out
	out.Processes = out.Processes[:0]
	if len(pids) == 0 {
		return
	}
	for _, pid := range pids {
		out.Processes = append(out.Processes, Process{PID: pid,
			Memory: metrics.Failure(SourceProcessList),
			SMUtil: metrics.Failure(SourceProcessUtil), MemUtil: metrics.Failure(SourceProcessUtil)})
	}
	if rd.dead {
		return
	}
	s.readProcessMemory(rd)
	s.readProcessUtil(rd, now)
}

func (s *Sampler) readProcessMemory(rd *reader) {
	s.enter("nvmlDeviceGetComputeRunningProcesses", rd.d.index)
	infos, r := rd.d.h.GetComputeRunningProcesses()
	st := rd.check("nvmlDeviceGetComputeRunningProcesses", r)
	for i := range rd.out.Processes {
		p := &rd.out.Processes[i]
		p.Memory = metrics.Value{Source: SourceProcessList, State: st}
		if st != metrics.OK {
			continue
		}
		p.Memory = metrics.Of(0, SourceProcessList)
		for _, info := range infos {
			if int(info.Pid) != p.PID {
				continue
			}
			p.OnGPU = true
			if info.UsedGpuMemory == valueNotAvailable {
				p.Memory = metrics.Unsupported(SourceProcessList)
			} else {
				p.Memory = metrics.Of(float64(info.UsedGpuMemory), SourceProcessList)
			}
		}
	}
}

// readProcessUtil averages each watched pid's samples since lastSeen.
// NVML answers NOT_FOUND when no process ran since then: that is 0 %.
func (s *Sampler) readProcessUtil(rd *reader, now time.Time) {
	d := rd.d
	if d.lastSeen == 0 {
		d.lastSeen = uint64(now.Add(-time.Second).UnixMicro())
	}
	s.enter("nvmlDeviceGetProcessUtilization", d.index)
	samples, r := d.h.GetProcessUtilization(d.lastSeen)
	st := metrics.OK
	if r != nvml.ERROR_NOT_FOUND {
		st = rd.check("nvmlDeviceGetProcessUtilization", r)
	}
	for i := range rd.out.Processes {
		p := &rd.out.Processes[i]
		p.SMUtil = metrics.Value{Source: SourceProcessUtil, State: st}
		p.MemUtil = p.SMUtil
		if st != metrics.OK {
			continue
		}
		var sm, mem, n float64
		for _, smp := range samples {
			if int(smp.Pid) == p.PID {
				sm, mem, n = sm+float64(smp.SmUtil), mem+float64(smp.MemUtil), n+1
			}
		}
		if n > 0 {
			p.OnGPU = true
			sm, mem = sm/n, mem/n
		}
		p.SMUtil = metrics.Of(sm, SourceProcessUtil)
		p.MemUtil = metrics.Of(mem, SourceProcessUtil)
	}
	for _, smp := range samples {
		d.lastSeen = max(d.lastSeen, smp.TimeStamp)
	}
}
