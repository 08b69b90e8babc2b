package proctable

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/metrics/host"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/draw"
	"github.com/pipetop/pipetop/tui/styles"
)

// recorder is a FAKE Signaler that records what would be sent; the real
// one (monitor/signal) is tested on real processes there and end to end
// in cmd/pipetop.
type recorder struct {
	refuse map[int]error
	sent   []string
}

func (r *recorder) Check(pid int) error { return r.refuse[pid] }

func (r *recorder) Signal(pid int, sig syscall.Signal) error {
	if err := r.Check(pid); err != nil {
		return err
	}
	r.sent = append(r.sent, sig.String()+" "+strconv.Itoa(pid))
	return nil
}

func ok(v float64) snapshot.Reading { return snapshot.Reading{Value: &v, State: "ok"} }

var missing = snapshot.Reading{State: "missing"}

func snap() *snapshot.Snapshot {
	return &snapshot.Snapshot{
		GPU: snapshot.GPU{Devices: []snapshot.Device{{Index: 0}, {Index: 1}}},
		GPUProcesses: []snapshot.GPUProcess{
			{GPU: 0, MIGIndex: -1, PID: 100, HostPID: 100, User: "alice", Command: "python train.py", GPUMem: ok(8 << 30), SM: ok(70), CPU: ok(99), RSS: ok(3 << 30), Age: ok(3700), Visibility: "visible", Trainer: true},
			{GPU: 1, MIGIndex: 2, PID: 7, HostPID: 200, User: "bob", Command: "jupyter kernel", GPUMem: ok(2 << 30), SM: ok(5), CPU: ok(1), RSS: ok(1 << 30), Age: ok(60), Visibility: "visible"},
			{GPU: 1, MIGIndex: -1, PID: 300, HostPID: 300, GPUMem: ok(1 << 30), SM: missing, CPU: missing, RSS: missing, Age: missing, Visibility: "not visible"},
		},
		GPUProcessNotes: []string{"1 GPU process(es) not visible here"},
		Process: &snapshot.Process{Alive: true, Self: snapshot.Proc{PID: 100, Comm: "python", User: "alice", CPU: ok(99)},
			Children: []snapshot.Proc{{PID: 101, Comm: "loader-0", User: "alice", CPU: ok(97), RSS: ok(300 << 20)}}},
	}
}

func newTable(t *testing.T) (*Model, *recorder, *time.Time) {
	t.Helper()
	clock := time.Unix(1000, 0)
	rec := &recorder{refuse: map[int]error{200: errors.New("process 200 belongs to bob: pipetop signals only your own processes unless it runs as root")}}
	m := New(styles.New(false), rec, func() time.Time { return clock })
	m.SetSnapshot(snap())
	m.SetSize(100, 8)
	return &m, rec, &clock
}

func pids(m *Model) []int {
	var out []int
	for _, r := range m.rows {
		out = append(out, r.pid)
	}
	return out
}

func TestRowsAndSort(t *testing.T) {
	m, _, _ := newTable(t)
	if got := pids(m); !slices.Equal(got, []int{100, 7, 300, 101}) {
		t.Fatalf("rows by GPU memory = %v, want [100 7 300 101] (the trainer's worker, on no GPU, last)", got)
	}
	view := m.View()
	for _, want := range []string{"GPU MEM▼", "*0     ", "1/2", "bob", "8.0GiB", "1h01m", "(not visible: host pid 300)", "*-", "loader-0", "1 GPU process(es) not visible here"} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q:\n%s", want, view)
		}
	}
	m.SortNext() // SM %
	if got := pids(m); !slices.Equal(got, []int{100, 7, 300, 101}[:4]) || columns[m.sortCol].name != "SM %" {
		t.Errorf("by SM %%: %v (sort %s)", got, columns[m.sortCol].name)
	}
	m.SortNext() // CPU %
	if got := pids(m); !slices.Equal(got, []int{100, 101, 7, 300}) {
		t.Errorf("by CPU %%: %v, want [100 101 7 300] (unknown last)", got)
	}
	for columns[m.sortCol].name != "USER" {
		m.SortNext()
	}
	if got := pids(m); !slices.Equal(got, []int{300, 100, 101, 7}) {
		t.Errorf("by USER: %v, want the unknown user first, then alice, bob", got)
	}
}

func TestFilter(t *testing.T) {
	m, _, _ := newTable(t)
	m.StartFilter()
	if !m.Capturing() {
		t.Fatal("typing a filter does not capture keys")
	}
	for _, r := range "JUPY" {
		m.Key(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	if got := pids(m); !slices.Equal(got, []int{7}) {
		t.Errorf("filter JUPY: %v, want [7]", got)
	}
	m.Key(tea.KeyPressMsg{Code: tea.KeyEnter})
	if m.Capturing() || !strings.Contains(m.Title(), `filter "JUPY"`) {
		t.Errorf("enter: capturing %v, title %q", m.Capturing(), m.Title())
	}
	m.StartFilter()
	m.Key(tea.KeyPressMsg{Code: tea.KeyEscape})
	if len(m.rows) != 4 {
		t.Errorf("esc left %d rows, want all 4", len(m.rows))
	}
}

func TestKillConfirmThenKill(t *testing.T) {
	m, rec, clock := newTable(t)
	m.Kill() // the selection starts on the first row, pid 100
	if !m.Capturing() || !strings.Contains(m.View(), "send SIGTERM to 100 (python train.py)? y to confirm") {
		t.Fatalf("F9 asked nothing:\n%s", m.View())
	}
	m.Key(tea.KeyPressMsg{Code: 'n', Text: "n"})
	if len(rec.sent) != 0 || !strings.Contains(m.View(), "cancelled") {
		t.Fatalf("n sent %v", rec.sent)
	}
	m.Kill()
	m.Key(tea.KeyPressMsg{Code: 'y', Text: "y"})
	*clock = clock.Add(4 * time.Second)
	m.Kill()
	m.Key(tea.KeyPressMsg{Code: 'y', Text: "y"})
	*clock = clock.Add(10 * time.Second)
	m.Kill()
	m.Key(tea.KeyPressMsg{Code: 'y', Text: "y"})
	if want := []string{"terminated 100", "killed 100", "terminated 100"}; !slices.Equal(rec.sent, want) {
		t.Errorf("sent %q, want %q", rec.sent, want)
	}
	if !strings.Contains(m.View(), "sent SIGTERM to 100") {
		t.Errorf("no result line:\n%s", m.View())
	}
	*clock = clock.Add(MessageFor)
	if strings.Contains(m.View(), "sent SIGTERM") {
		t.Errorf("the result line outlived MessageFor:\n%s", m.View())
	}
}

func TestKillRefusals(t *testing.T) {
	m, rec, _ := newTable(t)
	m.Move(1) // pid 7 in its container, host pid 200, bob's
	m.Kill()
	if m.Capturing() || !strings.Contains(m.View(), "belongs to bob") {
		t.Errorf("another user's process was not refused at once:\n%s", m.View())
	}
	m.Move(1) // not visible
	m.Kill()
	if m.Capturing() || !strings.Contains(m.View(), "process 300 is not visible here") {
		t.Errorf("an invisible process was not refused:\n%s", m.View())
	}
	if len(rec.sent) != 0 {
		t.Errorf("sent %v", rec.sent)
	}
}

func TestSizes(t *testing.T) {
	m, _, _ := newTable(t)
	for _, w := range []int{1, 20, 40, 80, 120} {
		for _, h := range []int{1, 2, 5, 12} {
			m.SetSize(w, h)
			v := m.View()
			lines := strings.Split(v, "\n")
			if len(lines) != h {
				t.Errorf("%dx%d: %d lines", w, h, len(lines))
			}
			for _, l := range lines {
				if draw.Width(l) != w {
					t.Errorf("%dx%d: line %q is %d wide", w, h, l, draw.Width(l))
				}
			}
		}
	}
	m.SetSize(40, 6)
	if v := m.View(); !strings.Contains(v, "PID") || !strings.Contains(v, "GPU MEM") || !strings.Contains(v, "COMMAND") {
		t.Errorf("40 columns lost the key columns:\n%s", v)
	}
	if lo, pref := m.Size(80); lo != 2 || pref != 6 {
		t.Errorf("Size = %d, %d; want 2 and header + 4 rows + note = 6", lo, pref)
	}
}

// TestThreadsToggle: H (htop's key for threads; t is the root's trainer picker) puts the trainer's threads under their processes,
// busiest first, with their roles and waits; the status line gives the
// usable cores, the quota and the pressure; threads are not signalled.
func TestThreadsToggle(t *testing.T) {
	m, rec, _ := newTable(t)
	s := snap()
	s.Threads = &snapshot.Threads{UsableCores: 2, Quota: snapshot.Quota{Version: 1, CPUs: 0.5, ThrottledShare: 0.8},
		Pressure: &snapshot.Pressure{SomeAvg10: 41},
		Threads: []host.ThreadInfo{{PID: 100, TID: 100, Name: "python", Role: "training", CPU: 60, Wait: 30},
			{PID: 100, TID: 102, Name: "python", Role: "intra-op", CPU: 70, Wait: 29},
			{PID: 101, TID: 101, Name: "loader-0", Role: "worker", CPU: 50, Wait: 41}}}
	m.SetSnapshot(s)
	m.SetSize(140, 12)
	if done, _ := m.HandleKey(tea.KeyPressMsg{Code: 'H', Text: "H"}); !done {
		t.Fatal("H is not the table's key")
	}
	if got := pids(m); !slices.Equal(got, []int{100, 102, 100, 7, 300, 101, 101}) {
		t.Fatalf("rows with threads = %v, want each process followed by its threads, busiest first", got)
	}
	view := m.View()
	for _, want := range []string{"├ intra-op python (wait 29 %)", "└ training python (wait 30 %)", "└ worker loader-0 (wait 41 %)",
		"usable cores 2", "quota 0.5 CPUs, throttled 80 % of periods", "CPU pressure 41 %"} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q:\n%s", want, view)
		}
	}
	m.SelectLine(1) // the first thread row
	m.Kill()
	if len(rec.sent) != 0 || !strings.Contains(m.View(), "is a thread") {
		t.Errorf("a thread row was signalled (%v) or not refused:\n%s", rec.sent, m.View())
	}
	m.HandleKey(tea.KeyPressMsg{Code: 'H', Text: "H"})
	if got := pids(m); !slices.Equal(got, []int{100, 7, 300, 101}) {
		t.Errorf("H again: rows %v, want the processes only", got)
	}
}
