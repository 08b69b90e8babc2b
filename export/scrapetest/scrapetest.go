// Package scrapetest fetches and queries Prometheus text expositions, for
// the tests of pipetop's exporter (in export and cmd/pipetop).
package scrapetest

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one exposition, by metric family name.
type Families map[string]*dto.MetricFamily

// Index turns gathered families into Families.
func Index(mfs []*dto.MetricFamily) Families {
	f := Families{}
	for _, mf := range mfs {
		f[mf.GetName()] = mf
	}
	return f
}

// Fetch scrapes url and parses the text exposition.
func Fetch(url string) (Families, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// Until scrapes url every 50 ms until ok accepts a scrape, failing the
// test (naming what it waited for) after 10 s.
func Until(t testing.TB, url, what string, ok func(Families) bool) Families {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := Fetch(url)
		if err != nil {
			t.Fatal(err)
		}
		if ok(f) {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s; the last scrape has %d families", what, len(f))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Series returns the series of the named family whose labels include want.
func (f Families) Series(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
next:
	for _, m := range f[name].GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// Has reports whether the named family has a series with the labels want.
func (f Families) Has(name string, want map[string]string) bool {
	return len(f.Series(name, want)) > 0
}

// Value returns the value of the first series of name with the labels
// want, and whether there is one.
func (f Families) Value(name string, want map[string]string) (float64, bool) {
	s := f.Series(name, want)
	if len(s) == 0 {
		return 0, false
	}
	return Value(s[0]), true
}

// Is reports whether exactly one series of name has the labels want, with
// value v.
func (f Families) Is(name string, want map[string]string, v float64) bool {
	s := f.Series(name, want)
	return len(s) == 1 && Value(s[0]) == v
}

// Value is a counter's or a gauge's value.
func Value(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}
