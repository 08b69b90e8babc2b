package snapshot

import "github.com/pipetop/pipetop/metrics/host"

// Threads is the trainer tree's threads over the last refresh and the CPU
// the run may use.
type Threads struct {
	// Threads are by pid then tid.
	Threads   []host.ThreadInfo `json:"threads"`
	Truncated bool              `json:"truncated,omitempty"`
	// AffinityCPUs is the trainer's affinity mask's CPU count (0:
	// unknown); UsableCores that capped by the quota: the cores every
	// verdict counts.
	AffinityCPUs int     `json:"affinity_cpus"`
	UsableCores  float64 `json:"usable_cores"`
	Quota        Quota   `json:"quota"`
	// Pressure is the host's /proc/pressure/cpu; null where the kernel
	// has none.
	Pressure *Pressure `json:"pressure"`
}

// Quota is the trainer's cgroup CPU limit.
type Quota struct {
	// Version is 1 or 2, 0 when no cgroup CPU files were readable.
	Version int    `json:"version"`
	Dir     string `json:"dir,omitempty"`
	// CPUs is the quota in CPUs, 0 without a limit.
	CPUs float64 `json:"cpus"`
	// Periods, Throttled and ThrottledSeconds are cumulative;
	// ThrottledShare is the share of the periods since the previous
	// refresh in which the quota ran out.
	Periods          uint64  `json:"periods"`
	Throttled        uint64  `json:"throttled"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
	ThrottledShare   float64 `json:"throttled_share"`
}

// Pressure is the host's CPU pressure: the share of the last 10 s in which
// some (full: all) runnable tasks waited for a CPU, in %, and those times
// since boot in µs.
type Pressure struct {
	SomeAvg10   float64 `json:"some_avg10"`
	FullAvg10   float64 `json:"full_avg10"`
	SomeTotalUs uint64  `json:"some_total_us"`
	FullTotalUs uint64  `json:"full_total_us"`
}

// ByRole sums the threads' CPU and wait (% of one core) per role.
func (t *Threads) ByRole() map[string]RoleTotal {
	m := map[string]RoleTotal{}
	for _, th := range t.Threads {
		r := m[th.Role]
		r.Threads++
		r.CPU += th.CPU
		r.Wait += th.Wait
		if th.CPU+th.Wait >= BusyThread {
			r.Busy++
		}
		m[th.Role] = r
	}
	return m
}

// BusyThread is the CPU + wait (% of one core) from which a thread counts
// as busy: it wanted a CPU at least a quarter of the time.
const BusyThread = 25

// RoleTotal is the threads of one role.
type RoleTotal struct {
	// Threads counts them, Busy those that wanted a CPU at least
	// BusyThread % of the time.
	Threads, Busy int
	// CPU and Wait are their sums, in % of one core.
	CPU, Wait float64
}
