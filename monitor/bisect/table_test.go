package bisect_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/bisect/bisecttest"
)

// FuzzDecodeReport: any bytes decode or are refused without a panic; a
// refusal names the schema or the JSON problem; a report that decodes is
// written as a table, and compared with itself shows no change and passes
// the gate.
func FuzzDecodeReport(f *testing.F) {
	whole, err := json.Marshal(bisecttest.Constructed(600))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{string(whole), `{"schema":"pipetop-bisect/1"}`, `{"schema":"pipetop-bisect/2","phases":[]}`,
		`{"schema":"pipetop-summary/1","name":"x"}`, `[]`, `{"schema":"pipetop-bisect/1","phases":[{"phase":"full","samples_per_sec":1e308}]}`,
		`{"pipetop_recording":1}` + "\n", "\x00"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := bisect.DecodeReport(b)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "schema") && !strings.HasPrefix(msg, "not a bisect report: ") {
				t.Fatalf("error %q names neither the schema nor the JSON problem", msg)
			}
			return
		}
		r.WriteTable(io.Discard)
		c := bisect.Compare(r, r)
		for _, p := range c.Phases {
			if p.StatusChanged || (p.Ratio != nil && *p.Ratio != 1) {
				t.Fatalf("a report compared with itself changed: %+v", p)
			}
		}
		if err := c.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
		if g, err := c.Judge(0); err == nil && g.Regressed {
			t.Fatalf("a report compared with itself regressed: %s", g.Line)
		}
	})
}
