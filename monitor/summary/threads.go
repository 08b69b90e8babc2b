package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// CPUUse is what the recorded threads part says of the run's CPU: the
// means over the refreshes that had rates.
type CPUUse struct {
	// Refreshes is how many readings the means are over.
	Refreshes int `json:"refreshes"`
	// UsableCores is the cores the run could use (affinity capped by the
	// quota), Demand the threads wanting a CPU, WaitShare the share of that
	// time they waited for one.
	UsableCores float64 `json:"usable_cores"`
	Demand      float64 `json:"demand"`
	WaitShare   float64 `json:"wait_share"`
	// QuotaCPUs is the last cgroup quota seen (0: none) and
	// ThrottledShare the mean share of its periods throttled.
	QuotaCPUs      float64 `json:"quota_cpus"`
	ThrottledShare float64 `json:"throttled_share"`
	// PressureMax is the highest host CPU pressure (some, avg10) seen, %.
	PressureMax float64 `json:"pressure_max"`
	// RoleCores is the mean cores used per thread role.
	RoleCores map[string]float64 `json:"role_cores"`
}

// threadsPart is the part of the threads source's JSON the summary reads
// (the monitor's snapshot.Threads, which this package does not import).
type threadsPart struct {
	Threads []struct {
		Role  string  `json:"role"`
		CPU   float64 `json:"cpu"`
		Wait  float64 `json:"wait"`
		Fresh bool    `json:"fresh"`
	} `json:"threads"`
	UsableCores float64 `json:"usable_cores"`
	Quota       struct {
		CPUs           float64 `json:"cpus"`
		ThrottledShare float64 `json:"throttled_share"`
	} `json:"quota"`
	Pressure *struct {
		SomeAvg10 float64 `json:"some_avg10"`
	} `json:"pressure"`
}

// cpuSums adds up the recorded threads parts.
type cpuSums struct {
	n                                   int
	usable, run, wait, throttled, press float64
	quota                               float64
	roles                               map[string]float64
}

// add reads one refresh's threads part; one without rates yet is skipped.
func (c *cpuSums) add(raw json.RawMessage) {
	var p threadsPart
	if json.Unmarshal(raw, &p) != nil || len(p.Threads) == 0 {
		return
	}
	var run, wait float64
	roles := map[string]float64{}
	for _, t := range p.Threads {
		if t.Fresh {
			continue
		}
		run += t.CPU / 100
		wait += t.Wait / 100
		roles[t.Role] += t.CPU / 100
	}
	if run+wait == 0 {
		return
	}
	if c.roles == nil {
		c.roles = map[string]float64{}
	}
	c.n++
	c.usable += p.UsableCores
	c.run += run
	c.wait += wait
	c.throttled += p.Quota.ThrottledShare
	c.quota = p.Quota.CPUs
	if p.Pressure != nil {
		c.press = max(c.press, p.Pressure.SomeAvg10)
	}
	for r, v := range roles {
		c.roles[r] += v
	}
}

// use is the means, nil without readings.
func (c *cpuSums) use() *CPUUse {
	if c.n == 0 {
		return nil
	}
	n := float64(c.n)
	u := &CPUUse{Refreshes: c.n, UsableCores: c.usable / n, Demand: (c.run + c.wait) / n, WaitShare: c.wait / (c.run + c.wait),
		QuotaCPUs: c.quota, ThrottledShare: c.throttled / n, PressureMax: c.press, RoleCores: map[string]float64{}}
	for r, v := range c.roles {
		u.RoleCores[r] = v / n
	}
	return u
}

// writeCPU writes the run's CPU use in one or two lines.
func writeCPU(w io.Writer, u *CPUUse) {
	if u == nil {
		return
	}
	fmt.Fprintf(w, "\nCPU: the run's threads wanted %.1f CPUs of %.3g usable on average and waited %.0f %% of that time for one",
		u.Demand, u.UsableCores, 100*u.WaitShare)
	if u.QuotaCPUs > 0 {
		fmt.Fprintf(w, "; quota %.3g CPUs, throttled in %.0f %% of its periods", u.QuotaCPUs, 100*u.ThrottledShare)
	}
	fmt.Fprintf(w, "; host CPU pressure up to %.0f %%\n", u.PressureMax)
	roles := slices.Sorted(maps.Keys(u.RoleCores))
	slices.SortStableFunc(roles, func(a, b string) int {
		switch {
		case u.RoleCores[a] > u.RoleCores[b]:
			return -1
		case u.RoleCores[a] < u.RoleCores[b]:
			return 1
		}
		return 0
	})
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = fmt.Sprintf("%s %.2f", r, u.RoleCores[r])
	}
	fmt.Fprintf(w, "  cores used by role: %s (over %d refreshes)\n", strings.Join(parts, ", "), u.Refreshes)
}
