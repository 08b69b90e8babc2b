package proctable

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/metrics/units"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// row is one line of the table: a process on one GPU, or a process of
// the trainer's tree that is on no GPU.
type row struct {
	gpu     string // "0", "3/1" (MIG slot), "" for none
	pid     int    // as shown: the pid in the process's own namespace
	sigPID  int    // the pid to signal here; 0 when not visible
	user    string
	mem     float64 // NaN when unknown
	sm      float64
	cpu     float64
	rss     float64
	age     float64
	command string
	trainer bool
	thread  bool // a thread of the row above (pid is its tid)
}

// id identifies a row across refreshes for the selection.
func (r row) id() string {
	if r.thread {
		return "t/" + strconv.Itoa(r.pid)
	}
	return r.gpu + "/" + strconv.Itoa(r.pid)
}

// withThreads puts each trainer process's threads under its row, busiest
// first: "└ intra-op python3 (wait 41 %)". Thread rows carry no pid to
// signal.
func withThreads(rows []row, t *snapshot.Threads) []row {
	if t == nil {
		return rows
	}
	byPID := map[int][]host.ThreadInfo{}
	for _, th := range t.Threads {
		byPID[th.PID] = append(byPID[th.PID], th)
	}
	out := make([]row, 0, len(rows)+len(t.Threads))
	for _, r := range rows {
		out = append(out, r)
		ths := byPID[r.pid]
		if !r.trainer || r.thread || len(ths) == 0 {
			continue
		}
		delete(byPID, r.pid)
		slices.SortStableFunc(ths, func(a, b host.ThreadInfo) int { return cmp.Compare(b.CPU+b.Wait, a.CPU+a.Wait) })
		for i, th := range ths {
			branch := "├ "
			if i == len(ths)-1 {
				branch = "└ "
			}
			out = append(out, row{pid: th.TID, user: r.user, mem: math.NaN(), sm: math.NaN(), cpu: th.CPU, rss: math.NaN(), age: math.NaN(),
				command: fmt.Sprintf("%s%s %s (wait %.0f %%)", branch, th.Role, th.Name, th.Wait), trainer: true, thread: true})
		}
	}
	return out
}

// cpuLine says what CPU the run may use: usable cores, the quota and how
// often it bites, the host's CPU pressure.
func cpuLine(t *snapshot.Threads) string {
	if t == nil {
		return "threads: no trainer"
	}
	parts := []string{fmt.Sprintf("%d threads", len(t.Threads))}
	if t.UsableCores > 0 {
		parts = append(parts, fmt.Sprintf("usable cores %.3g", t.UsableCores))
	}
	switch {
	case t.Quota.CPUs > 0:
		parts = append(parts, fmt.Sprintf("quota %.3g CPUs, throttled %.0f %% of periods", t.Quota.CPUs, 100*t.Quota.ThrottledShare))
	case t.Quota.Version != 0:
		parts = append(parts, "no CPU quota")
	}
	if p := t.Pressure; p != nil {
		parts = append(parts, fmt.Sprintf("CPU pressure %.0f %% (some, 10 s)", p.SomeAvg10))
	}
	return strings.Join(parts, " · ")
}

func val(r snapshot.Reading) float64 { return r.Or(math.NaN()) }

// buildRows lists every GPU process, then the trainer's processes that
// are on no GPU.
func buildRows(s *snapshot.Snapshot) []row {
	if s == nil {
		return nil
	}
	var rows []row
	onGPU := map[int]bool{}
	for _, p := range s.GPUProcesses {
		gpu := strconv.Itoa(p.GPU)
		if p.MIGIndex >= 0 {
			gpu += "/" + strconv.Itoa(p.MIGIndex)
		}
		r := row{gpu: gpu, pid: p.PID, user: p.User, mem: val(p.GPUMem), sm: val(p.SM), cpu: val(p.CPU),
			rss: val(p.RSS), age: val(p.Age), command: p.Command, trainer: p.Trainer}
		if p.Visibility == "visible" {
			r.sigPID = p.HostPID
		} else {
			r.command = "(" + p.Visibility + ": host pid " + strconv.Itoa(p.HostPID) + ")"
		}
		onGPU[p.HostPID] = true
		rows = append(rows, r)
	}
	if s.Process == nil || !s.Process.Alive {
		return rows
	}
	tree := append([]snapshot.Proc{s.Process.Self}, s.Process.Children...)
	for i, p := range tree {
		if onGPU[p.PID] {
			continue
		}
		r := row{pid: p.PID, sigPID: p.PID, user: p.User, mem: math.NaN(), sm: math.NaN(), cpu: val(p.CPU),
			rss: val(p.RSS), age: math.NaN(), command: p.Comm, trainer: true}
		if i == 0 && s.Trainer != nil && s.Trainer.UptimeSec > 0 {
			r.age = s.Trainer.UptimeSec
		}
		rows = append(rows, r)
	}
	return rows
}

// column is one column of the table.
type column struct {
	name  string
	width int  // 0: the rest of the line (COMMAND)
	prio  int  // columns are dropped from the highest prio when narrow
	text  bool // sorted ascending as text; numbers sort descending
	cell  func(r row) string
	num   func(r row) float64
	str   func(r row) string
}

func num(v float64, f func(float64) string) string {
	if math.IsNaN(v) {
		return "–"
	}
	return f(v)
}

func pct(v float64) string { return fmt.Sprintf("%.0f", v) }

func bytesShort(v float64) string { return strings.ReplaceAll(units.Bytes(v), " ", "") }

// columns in display order; the sort cycles through them in this order.
var columns = []column{
	{name: "GPU", width: 4, prio: 3, text: true, cell: func(r row) string { return cmp.Or(r.gpu, "-") }, str: func(r row) string { return r.gpu }},
	{name: "PID", width: 7, prio: 0, num: func(r row) float64 { return float64(r.pid) }, cell: func(r row) string { return strconv.Itoa(r.pid) }},
	{name: "USER", width: 8, prio: 5, text: true, cell: func(r row) string { return cmp.Or(r.user, "?") }, str: func(r row) string { return r.user }},
	{name: "GPU MEM", width: 8, prio: 1, num: func(r row) float64 { return r.mem }, cell: func(r row) string { return num(r.mem, bytesShort) }},
	{name: "SM %", width: 5, prio: 6, num: func(r row) float64 { return r.sm }, cell: func(r row) string { return num(r.sm, pct) }},
	{name: "CPU %", width: 6, prio: 4, num: func(r row) float64 { return r.cpu }, cell: func(r row) string { return num(r.cpu, pct) }},
	{name: "RSS", width: 8, prio: 7, num: func(r row) float64 { return r.rss }, cell: func(r row) string { return num(r.rss, bytesShort) }},
	{name: "TIME", width: 6, prio: 8, num: func(r row) float64 { return r.age }, cell: func(r row) string {
		return num(r.age, func(s float64) string { return units.Age(secs(s)) })
	}},
	{name: "COMMAND", prio: 2, text: true, cell: func(r row) string { return r.command }, str: func(r row) string { return r.command }},
}

// commandMin is the narrowest COMMAND column worth keeping other columns
// for.
const commandMin = 10

// fit picks the columns that fit w cells: the table's marker column, then
// columns by priority while COMMAND keeps commandMin cells.
func fit(w int) []int {
	used := 1 + commandMin
	keep := map[int]bool{}
	for prio := 0; prio < len(columns); prio++ {
		for i, c := range columns {
			if c.prio != prio || c.width == 0 {
				continue
			}
			if used+c.width+1 <= w {
				keep[i] = true
				used += c.width + 1
			}
		}
	}
	var out []int
	for i, c := range columns {
		if keep[i] || c.width == 0 {
			out = append(out, i)
		}
	}
	return out
}

// sortRows orders rows by column col: numbers descending with unknowns
// last, text ascending; ties by GPU memory, then pid.
func sortRows(rows []row, col int) {
	c := columns[col]
	less := func(a, b row) int {
		if c.text {
			if x := strings.Compare(c.str(a), c.str(b)); x != 0 {
				return x
			}
		} else if x := cmpNum(c.num(a), c.num(b)); x != 0 {
			return x
		}
		return cmp.Or(cmpNum(a.mem, b.mem), cmp.Compare(a.pid, b.pid), strings.Compare(a.gpu, b.gpu))
	}
	slices.SortStableFunc(rows, less)
}

// cmpNum orders larger first, NaN last.
func cmpNum(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(b, a)
}

// match reports whether the row contains the filter text (any case) in
// its user, command, pid or GPU.
func match(r row, filter string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	return strings.Contains(strings.ToLower(r.command), f) || strings.Contains(strings.ToLower(r.user), f) ||
		strings.Contains(strconv.Itoa(r.pid), f) || r.gpu != "" && strings.Contains("gpu "+r.gpu, f)
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// ColumnByName finds a column by its name in any case ("CPU %", "cpu %")
// or a short alias: gpu, pid, user, gpu_mem (mem), sm, cpu, rss, time,
// command.
func ColumnByName(name string) (int, bool) {
	aliases := map[string]string{"mem": "gpu mem", "gpu_mem": "gpu mem", "sm": "sm %", "cpu": "cpu %"}
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		n = a
	}
	for i, c := range columns {
		if strings.ToLower(c.name) == n {
			return i, true
		}
	}
	return 0, false
}

// ColumnNames are the short names ColumnByName takes.
const ColumnNames = "gpu, pid, user, gpu_mem, sm, cpu, rss, time, command"
