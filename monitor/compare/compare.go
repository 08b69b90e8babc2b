// Package compare is pipetop compare: two runs (recordings or run summary
// files, monitor/summary) or two bisect reports (monitor/bisect) side by
// side, as text or JSON, and with a gate the decision whether B regressed.
package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/summary"
)

// Options say how to write a comparison and whether to judge it.
type Options struct {
	// JSON writes the comparison as indented JSON instead of text.
	JSON bool
	// Gate judges whether B regressed by more than Pct percent (the gate
	// line follows the text; JSON carries no line).
	Gate bool
	Pct  float64
}

// Outcome is a gate's decision: Regressed, and the Line that says what
// regressed (or did not).
type Outcome struct {
	Regressed bool
	Line      string
}

// Files compares the files a and b, both runs or both bisect reports (or
// bisect --record directories), and writes the comparison to w.
func Files(a, b string, o Options, w io.Writer) (Outcome, error) {
	both, err := bisects(a, b)
	if err != nil {
		return Outcome{}, err
	}
	if both {
		return bisectFiles(a, b, o, w)
	}
	return runFiles(a, b, o, w)
}

// runFiles compares two runs.
func runFiles(pathA, pathB string, o Options, w io.Writer) (Outcome, error) {
	a, err := summary.Load(pathA)
	if err != nil {
		return Outcome{}, err
	}
	b, err := summary.Load(pathB)
	if err != nil {
		return Outcome{}, err
	}
	c := summary.Compare(a, b)
	var out Outcome
	if o.Gate {
		g := c.Judge(o.Pct)
		out = Outcome{Regressed: g.Regressed, Line: g.Line}
	}
	if o.JSON {
		err = writeJSON(w, c)
	} else {
		err = summary.WriteComparison(w, a, b, c)
	}
	return out, written(w, err, o, out)
}

// bisectFiles compares two bisect reports: their phases side by side, and
// with a gate the decision on the full phase.
func bisectFiles(pathA, pathB string, o Options, w io.Writer) (Outcome, error) {
	fa, _ := bisect.Locate(pathA)
	fb, _ := bisect.Locate(pathB)
	a, err := bisect.ReadReport(fa)
	if err != nil {
		return Outcome{}, fmt.Errorf("compare: %w", err)
	}
	b, err := bisect.ReadReport(fb)
	if err != nil {
		return Outcome{}, fmt.Errorf("compare: %w", err)
	}
	c := bisect.Compare(a, b)
	c.A.File, c.B.File = fa, fb
	var out Outcome
	if o.Gate {
		g, err := c.Judge(o.Pct)
		if err != nil {
			return Outcome{}, fmt.Errorf("compare %s %s: %w", fa, fb, err)
		}
		out = Outcome{Regressed: g.Regressed, Line: g.Line}
	}
	if o.JSON {
		err = writeJSON(w, c)
	} else {
		err = c.WriteText(w)
	}
	return out, written(w, err, o, out)
}

// written ends a comparison written with err: the gate's line after the
// text.
func written(w io.Writer, err error, o Options, out Outcome) error {
	if err != nil {
		return fmt.Errorf("compare: write: %w", err)
	}
	if o.Gate && !o.JSON {
		if _, err := fmt.Fprintln(w, out.Line); err != nil {
			return fmt.Errorf("compare: write: %w", err)
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// bisects is whether both files are bisect reports (or --record
// directories); an error when only one is.
func bisects(a, b string) (bool, error) {
	_, ka := bisect.Locate(a)
	_, kb := bisect.Locate(b)
	if ka == kb {
		return ka, nil
	}
	run := map[bool]string{true: b, false: a}[ka]
	if _, err := os.Stat(run); err != nil {
		return false, fmt.Errorf("compare: %w", err)
	}
	kind := func(is bool) string {
		if is {
			return "a bisect report"
		}
		return "a run (recording or summary)"
	}
	return false, fmt.Errorf("compare: A (%s) is %s but B (%s) is %s: compare two runs or two bisect reports", a, kind(ka), b, kind(kb))
}
