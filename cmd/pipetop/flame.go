package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pipetop/pipetop/export/flame"
)

// flameFlags is pipetop flame: the stack samples of a recording (or of a
// run summary) as speedscope JSON or folded stacks.
func flameFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "write to this `file` (default: standard output)")
	folded := fs.Bool("folded", false, "write folded stacks (flamegraph.pl, inferno) instead of speedscope JSON")
	return func(_ context.Context, pos []string, stdout, stderr io.Writer) error {
		samples, damage, err := flame.Read(pos[0])
		if err != nil {
			return err
		}
		if damage != nil {
			fmt.Fprintf(stderr, "pipetop: %v; using the samples up to there\n", damage)
		}
		if len(samples) == 0 {
			return fmt.Errorf("flame: %s holds no stack samples (they come from Python runs under pipetop run, with PIPETOP_STACKS_HZ above 0)", pos[0])
		}
		w := stdout
		var f *os.File
		if *out != "" {
			if f, err = os.Create(*out); err != nil {
				return fmt.Errorf("flame: %w", err)
			}
			w = f
		}
		if *folded {
			err = flame.WriteFolded(w, samples)
		} else {
			err = flame.WriteSpeedscope(w, filepath.Base(pos[0]), samples)
		}
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("flame %s: %w", pos[0], err)
		}
		return nil
	}
}
