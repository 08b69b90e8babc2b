package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pipetop/pipetop/monitor/summary"
)

// report finds the run summaries written since start in dir, adds the
// verdict to each (and to its file, with what pipetop run kept of its
// process, kept by pid), and prints them: a table on stderr,
// or a JSON array on stdout. The ranks of one run get one job summary
// instead (a pipetop-job/1 document in the array), written beside their
// own files.
func report(dir string, start time.Time, kept map[int]summary.Kept, asJSON bool, stdout, stderr io.Writer) error {
	files, errs, err := summary.ReadScripts(dir, start, kept)
	if err != nil {
		return err
	}
	for _, err := range errs {
		fmt.Fprintln(stderr, "pipetop:", err)
	}
	jobs := summary.Jobs(files)
	out := []any{}
	for _, f := range files {
		if r := f.RankOf; r != nil && len(jobs[r.Run]) > 0 && r.WorldSize > 1 {
			if jobs[r.Run][0].Path != f.Path {
				continue // the job is reported once, at its first rank
			}
			j, err := summary.BuildJob(dir, r.Run, jobs[r.Run])
			if err != nil {
				fmt.Fprintln(stderr, "pipetop:", err)
				continue
			}
			out = append(out, j)
			if !asJSON {
				summary.WriteJobText(stderr, j)
			}
			continue
		}
		out = append(out, f.Script)
		if !asJSON {
			summary.WriteScriptText(stderr, f.Script, f.Path)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "pipetop: no training step was seen (no optimizer step in an instrumented Python process), so there is no run summary")
	}
	return nil
}
