package recording

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Merge writes one recording at dst from the recordings of the ranks of a
// run (srcs, one per rank, each entry marked with its rank), entries in
// time order. Host readings are kept from the first source only: the ranks
// of one host read the same machine. A damaged source is merged up to its
// damage, which the returned error names; the merged file is still written.
func Merge(dst string, srcs []string) error {
	var all []Entry
	var damage []error
	h := Header{Source: "in-process, ranks merged"}
	for i, src := range srcs {
		sh, es, err := ReadAll(src)
		if es == nil && err != nil {
			return fmt.Errorf("merge recordings: %w", err)
		}
		if err != nil {
			damage = append(damage, err)
		}
		if i == 0 {
			h.StartNs, h.Host = sh.StartNs, sh.Host
		}
		h.StartNs = min(h.StartNs, sh.StartNs)
		for _, e := range es {
			if e.Host == nil || i == 0 {
				all = append(all, e)
			}
		}
	}
	slices.SortStableFunc(all, func(a, b Entry) int { return cmp.Compare(a.T.UnixNano(), b.T.UnixNano()) })
	w, err := Create(dst, h)
	if err != nil {
		return err
	}
	for _, e := range all {
		w.Entry(e)
	}
	if err := w.Close(); err != nil {
		return err
	}
	return errors.Join(damage...)
}

// RankPath is the file rank writes its part of a recording at path to:
// FILE-rankR.EXT. The Python publisher names a rank's file the same way.
func RankPath(path string, rank int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-rank%d%s", strings.TrimSuffix(path, ext), rank, ext)
}
