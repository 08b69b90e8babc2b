package export

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dashboardQuery is one query of the Grafana dashboard.
type dashboardQuery struct {
	panel, expr string
}

// dashboardQueries reads every panel target of export/grafana/pipetop.json,
// with the dashboard variables replaced by what selects everything and
// $__rate_interval by rateInterval.
func dashboardQueries(t *testing.T, rateInterval string) []dashboardQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("grafana", "pipetop.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/pipetop.json: %v", err)
	}
	r := strings.NewReplacer("$__rate_interval", rateInterval, "$run", ".*", "$rank", ".*")
	var qs []dashboardQuery
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			qs = append(qs, dashboardQuery{p.Title, r.Replace(tg.Expr)})
		}
	}
	return qs
}

// TestDashboardUsesRecordedRules: every recorded series the dashboard
// reads (level:metric:operation names) is recorded by rules.yml.
func TestDashboardUsesRecordedRules(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join("prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	recorded := regexp.MustCompile(`\b(?:rank|run):[a-z0-9_]+:[a-z0-9_]+`)
	used := 0
	for _, q := range dashboardQueries(t, "1m") {
		for _, name := range recorded.FindAllString(q.expr, -1) {
			used++
			if !strings.Contains(string(rules), "record: "+name+"\n") {
				t.Errorf("panel %q reads %s, which rules.yml does not record", q.panel, name)
			}
		}
	}
	if used == 0 {
		t.Error("the dashboard reads no recorded series")
	}
}
