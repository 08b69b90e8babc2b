package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/pipetop/pipetop/monitor/summary"
)

// compareFlags is pipetop compare: two runs side by side, and with
// --fail-if-slower a regression gate.
func compareFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	failPct := fs.Float64("fail-if-slower", -1, "exit with status 4 when B's step time is more than `PCT` % longer than A's,\n"+
		"or its samples/s (steps/s) more than PCT % lower, beyond the runs' noise; one line says what regressed")
	return func(_ context.Context, pos []string, stdout, _ io.Writer) error {
		gate := false
		fs.Visit(func(f *flag.Flag) { gate = gate || f.Name == "fail-if-slower" })
		if gate && (*failPct < 0 || math.IsNaN(*failPct)) {
			return usageError{fmt.Errorf("--fail-if-slower %g: want a percentage of at least 0", *failPct)}
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
