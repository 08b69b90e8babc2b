package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	runreport "github.com/pipetop/pipetop/export/report"
)

// reportFlags is pipetop report: a run as one self-contained HTML page
// with plots.
func reportFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "the HTML `file` to write (default: FILE's name with .html)")
	return func(_ context.Context, pos []string, _, stderr io.Writer) error {
		r, err := runreport.FromFile(pos[0])
		if err != nil {
			return err
		}
		path := *out
		if path == "" {
			path = strings.TrimSuffix(pos[0], filepath.Ext(pos[0])) + ".html"
		}
		if r.Run.Damage != "" {
			fmt.Fprintf(stderr, "pipetop: %s; reporting up to there\n", r.Run.Damage)
		}
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := runreport.Write(f, r); err != nil {
			f.Close()
			return fmt.Errorf("report %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("report %s: %w", path, err)
		}
		fmt.Fprintf(stderr, "pipetop: wrote %s\n", path)
		return nil
	}
}
