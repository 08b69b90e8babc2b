package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// EndOfRun finds the run summaries written since start in dir, judges
// each (adding its verdict to its file, with what pipetop run kept of its
// process, kept by pid: ReadScripts) and prints them, as pipetop run does
// when its command ends: a table on stderr, or a JSON array on stdout. The
// ranks of one run get one job summary instead (a pipetop-job/1 document
// in the array), written beside their own files.
func EndOfRun(dir string, start time.Time, kept map[int]Kept, asJSON bool, stdout, stderr io.Writer) error {
	files, errs, err := ReadScripts(dir, start, kept)
	if err != nil {
		return err
	}
	for _, err := range errs {
		fmt.Fprintln(stderr, "pipetop:", err)
	}
	jobs := Jobs(files)
	out := []any{}
	for _, f := range files {
		if r := f.RankOf; r != nil && len(jobs[r.Run]) > 0 && r.WorldSize > 1 {
			if jobs[r.Run][0].Path != f.Path {
				continue // the job is reported once, at its first rank
			}
			j, err := BuildJob(dir, r.Run, jobs[r.Run])
			if err != nil {
				fmt.Fprintln(stderr, "pipetop:", err)
				continue
			}
			out = append(out, j)
			if !asJSON {
				WriteJobText(stderr, j)
			}
			continue
		}
		out = append(out, f.Script)
		if !asJSON {
			WriteScriptText(stderr, f.Script, f.Path)
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
