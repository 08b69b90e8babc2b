package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/pipetop/pipetop/internal/cli"
	"github.com/pipetop/pipetop/monitor/compare"
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
		o := compare.Options{JSON: *asJSON, Pct: *failPct, Gate: cli.Set(fs)["fail-if-slower"]}
		if o.Gate && (o.Pct < 0 || math.IsNaN(o.Pct)) {
			return usageError(fmt.Errorf("--fail-if-slower %g: want a percentage of at least 0", o.Pct))
		}
		out, err := compare.Files(pos[0], pos[1], o, stdout)
		if err == nil && out.Regressed {
			err = regression(out.Line)
		}
		return err
	}
}
