package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	runreport "github.com/pipetop/pipetop/export/report"
	"github.com/pipetop/pipetop/monitor/bisect"
)

// reportFlags is pipetop report: a run, or a bisect, as one self-contained
// HTML page with plots.
func reportFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "the HTML `file` to write (default: FILE's name with .html; a bisect --record DIR: DIR/bisect.html)")
	return func(_ context.Context, pos []string, _, stderr io.Writer) error {
		if file, ok := bisect.Locate(pos[0]); ok {
			return reportBisect(file, *out, stderr)
		}
		r, err := runreport.FromFile(pos[0])
		if err != nil {
			return err
		}
		path := *out
		if path == "" {
			path = htmlPath(pos[0])
		}
		if r.Run.Damage != "" {
			fmt.Fprintf(stderr, "pipetop: %s; reporting up to there\n", r.Run.Damage)
		}
		return writePage(path, stderr, func(w io.Writer) error { return runreport.Write(w, r) })
	}
}

// htmlPath is path with the extension .html.
func htmlPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".html"
}

// writePage writes a page to the file path with write, and says so.
func writePage(path string, stderr io.Writer, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("report %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	fmt.Fprintf(stderr, "pipetop: wrote %s\n", path)
	return nil
}

// reportBisect writes the page of the bisect report in file to out
// (default: file's name with .html), after the run report of each phase
// recorded beside file, which the page links to.
func reportBisect(file, out string, stderr io.Writer) error {
	rep, err := bisect.ReadReport(file)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if out == "" {
		out = htmlPath(file)
	}
	b := runreport.Bisect{File: file, Report: rep, Links: phaseReports(rep, filepath.Dir(file), filepath.Dir(out), stderr)}
	return writePage(out, stderr, func(w io.Writer) error { return runreport.WriteBisect(w, b) })
}

// phaseReports writes the run report of each phase recorded in dir
// (dir/PHASE.pipetop, PHASE one of bisect.Phases) to dir/PHASE.html and
// returns the links to them from pageDir, by phase; a recording that
// cannot be reported is said on stderr and left out.
func phaseReports(rep bisect.Report, dir, pageDir string, stderr io.Writer) map[string]string {
	links := map[string]string{}
	for _, p := range rep.Phases {
		rec := filepath.Join(dir, p.Name+".pipetop")
		if !slices.Contains(bisect.Phases, p.Name) || links[p.Name] != "" || !exists(rec) {
			continue
		}
		link, err := phaseReport(rec, pageDir, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "pipetop: phase %s: %v; its card has no link\n", p.Name, err)
			continue
		}
		links[p.Name] = link
	}
	return links
}

// phaseReport writes the run report of the recording rec beside it and
// returns the link to it from pageDir.
func phaseReport(rec, pageDir string, stderr io.Writer) (string, error) {
	r, err := runreport.FromFile(rec)
	if err != nil {
		return "", err
	}
	page := htmlPath(rec)
	if err := writePage(page, stderr, func(w io.Writer) error { return runreport.Write(w, r) }); err != nil {
		return "", err
	}
	return relLink(pageDir, page)
}

// relLink is the relative URL of the file path from the directory from.
func relLink(from, path string) (string, error) {
	af, err := filepath.Abs(from)
	if err != nil {
		return "", err
	}
	ap, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(af, ap)
	if err != nil {
		return "", err
	}
	return (&url.URL{Path: filepath.ToSlash(rel)}).String(), nil
}

// exists is whether a file is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
