package main

import (
	"context"
	"flag"
	"io"

	"github.com/pipetop/pipetop/export/flame"
)

// flameFlags is pipetop flame: the stack samples of a recording (or of a
// run summary) as speedscope JSON or folded stacks.
func flameFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "write to this `file` (default: standard output)")
	folded := fs.Bool("folded", false, "write folded stacks (flamegraph.pl, inferno) instead of speedscope JSON")
	return func(_ context.Context, pos []string, stdout, stderr io.Writer) error {
		return flame.WriteFile(pos[0], *out, *folded, stdout, stderr)
	}
}
