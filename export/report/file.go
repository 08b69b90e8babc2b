package report

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pipetop/pipetop/monitor/bisect"
)

// WriteFile writes the page of path, a run (a recording or a run summary
// file) or a bisect (its report, or its --record directory), to out
// (default: path's name with .html; a bisect directory's: DIR/bisect.html)
// and says so on log. A bisect's page links to the run page of each phase
// recorded beside its report, written first.
func WriteFile(path, out string, log io.Writer) error {
	if file, ok := bisect.Locate(path); ok {
		return writeBisectFile(file, out, log)
	}
	r, err := FromFile(path)
	if err != nil {
		return err
	}
	if out == "" {
		out = htmlPath(path)
	}
	if r.Run.Damage != "" {
		fmt.Fprintf(log, "pipetop: %s; reporting up to there\n", r.Run.Damage)
	}
	return writePage(out, log, func(w io.Writer) error { return Write(w, r) })
}

// htmlPath is path with the extension .html.
func htmlPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".html"
}

// writePage writes a page to the file path with write, and says so.
func writePage(path string, log io.Writer, write func(io.Writer) error) error {
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
	fmt.Fprintf(log, "pipetop: wrote %s\n", path)
	return nil
}

// writeBisectFile writes the page of the bisect report in file to out
// (default: file's name with .html), after the run report of each phase
// recorded beside file, which the page links to.
func writeBisectFile(file, out string, log io.Writer) error {
	rep, err := bisect.ReadReport(file)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if out == "" {
		out = htmlPath(file)
	}
	b := Bisect{File: file, Report: rep, Links: phaseReports(rep, filepath.Dir(file), filepath.Dir(out), log)}
	return writePage(out, log, func(w io.Writer) error { return WriteBisect(w, b) })
}

// phaseReports writes the run report of each phase recorded in dir
// (dir/PHASE.pipetop, PHASE one of bisect.Phases) to dir/PHASE.html and
// returns the links to them from pageDir, by phase; a recording that
// cannot be reported is said on log and left out.
func phaseReports(rep bisect.Report, dir, pageDir string, log io.Writer) map[string]string {
	links := map[string]string{}
	for _, p := range rep.Phases {
		rec := filepath.Join(dir, p.Name+".pipetop")
		if !slices.Contains(bisect.Phases, p.Name) || links[p.Name] != "" || !exists(rec) {
			continue
		}
		link, err := phaseReport(rec, pageDir, log)
		if err != nil {
			fmt.Fprintf(log, "pipetop: phase %s: %v; its card has no link\n", p.Name, err)
			continue
		}
		links[p.Name] = link
	}
	return links
}

// phaseReport writes the run report of the recording rec beside it and
// returns the link to it from pageDir.
func phaseReport(rec, pageDir string, log io.Writer) (string, error) {
	r, err := FromFile(rec)
	if err != nil {
		return "", err
	}
	page := htmlPath(rec)
	if err := writePage(page, log, func(w io.Writer) error { return Write(w, r) }); err != nil {
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
