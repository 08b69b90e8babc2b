package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/tui/styles"
)

// TestRemoteViewPanes: a snapshot read from Prometheus (two ranks on two
// hosts) shows the server and the shown rank's host in the header, a host
// column in the ranks pane, and says what is not available remotely; r and
// R ask for the next and previous rank. (The same screen from a real
// Prometheus is cmd/pipetop's TestTwoHosts.)
func TestRemoteViewPanes(t *testing.T) {
	s := *withRanks(t, 2, 1).snap
	s.Ranks[1].Host = "node-b"
	s.Remote = &snapshot.Remote{URL: "http://prom:9090", Run: "job-7", Rank: 0, Host: "node-a", Instance: "10.0.0.1:9464", RangeSec: 30,
		Unavailable: []string{"process table"}}
	s.Process, s.Loader = nil, nil
	var chosen []int
	m := New(Options{Styles: styles.New(false), ChooseRank: func(r int) { chosen = append(chosen, r) }})
	m.showTab = true
	m.SetSnapshot(&s)
	got := m.Render(120, 60)
	for _, want := range []string{
		"prometheus http://prom:9090 · rank 0 on node-a",
		"r0 node-a", "r1 node-b",
		"not available remotely: pipetop export serves no process table (run pipetop on node-a for it)",
		"loader statistics: not available remotely",
		"stages · means (no per-stage p50/p99 remotely)",
		"straggler: rank 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("screen lacks %q:\n%s", want, got)
		}
	}
	m.Update(tea.KeyPressMsg{Code: 'r', Text: "r"})
	m.Update(tea.KeyPressMsg{Code: 'r', Text: "R", Mod: tea.ModShift})
	if len(chosen) != 2 || chosen[0] != 1 || chosen[1] != 1 {
		t.Errorf("r then R chose %v, want [1 1] (from rank 0: next is 1, previous wraps to 1)", chosen)
	}

	local := New(Options{Styles: styles.New(false), ChooseRank: func(r int) { t.Errorf("a local view chose rank %d", r) }})
	l := *withRanks(t, 2, 1).snap
	local.SetSnapshot(&l)
	local.Update(tea.KeyPressMsg{Code: 'r', Text: "r"})
	if out := local.Render(120, 40); strings.Contains(out, "r0 node-a") || strings.Contains(out, "prometheus") {
		t.Errorf("a local view of one host shows a host column or a server:\n%s", out)
	}
}
