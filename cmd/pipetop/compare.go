package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/pipetop/pipetop/monitor/bisect"
	"github.com/pipetop/pipetop/monitor/summary"
)

// compareFlags is pipetop compare: two runs (or two bisect reports) side
// by side, and with --fail-if-slower a regression gate.
func compareFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	failPct := fs.Float64("fail-if-slower", -1, "exit with status 4 when B's step time is more than `PCT` % longer than A's,\n"+
		"or its samples/s (steps/s) more than PCT % lower, beyond the runs' noise; one line says what regressed;\n"+
		"of two bisect reports: when B's full phase has more than PCT % fewer samples/s than A's (or none),\n"+
		"with no noise model: a bisect keeps no per-step spread")
	return func(_ context.Context, pos []string, stdout, _ io.Writer) error {
		gate := false
		fs.Visit(func(f *flag.Flag) { gate = gate || f.Name == "fail-if-slower" })
		if gate && (*failPct < 0 || math.IsNaN(*failPct)) {
			return usageError{fmt.Errorf("--fail-if-slower %g: want a percentage of at least 0", *failPct)}
		}
		both, err := bisectPair(pos[0], pos[1])
		if err != nil {
			return err
		}
		if both {
			return compareBisect(pos[0], pos[1], gate, *failPct, *asJSON, stdout)
		}
		a, err := summary.Load(pos[0])
		if err != nil {
			return err
		}
		b, err := summary.Load(pos[1])
		if err != nil {
			return err
		}
		c := summary.Compare(a, b)
		var g summary.Gate
		if gate {
			g = c.Judge(*failPct)
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(c)
		} else {
			err = summary.WriteComparison(stdout, a, b, c)
		}
		if err != nil {
			return fmt.Errorf("compare: write: %w", err)
		}
		if !gate {
			return nil
		}
		if !*asJSON {
			fmt.Fprintln(stdout, g.Line)
		}
		if g.Regressed {
			return regression{errors.New(g.Line)}
		}
		return nil
	}
}

// bisectPair is whether both files are bisect reports (or --record
// directories); an error when only one is.
func bisectPair(a, b string) (bool, error) {
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

// compareBisect is pipetop compare of two bisect reports: their phases side
// by side, and with gate the --fail-if-slower decision on the full phase.
func compareBisect(pathA, pathB string, gate bool, pct float64, asJSON bool, stdout io.Writer) error {
	fa, _ := bisect.Locate(pathA)
	fb, _ := bisect.Locate(pathB)
	a, err := bisect.ReadReport(fa)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	b, err := bisect.ReadReport(fb)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	c := bisect.Compare(a, b)
	c.A.File, c.B.File = fa, fb
	var g bisect.Gate
	if gate {
		if g, err = c.Judge(pct); err != nil {
			return fmt.Errorf("compare %s %s: %w", fa, fb, err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		err = c.WriteText(stdout)
	}
	if err != nil {
		return fmt.Errorf("compare: write: %w", err)
	}
	if gate && !asJSON {
		fmt.Fprintln(stdout, g.Line)
	}
	if g.Regressed {
		return regression{errors.New(g.Line)}
	}
	return nil
}
