package recording

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Merge writes one recording at dst from the recordings of the ranks of a
// run (srcs, one per rank, each entry marked with its rank), entries in
// time order, reading each source as it goes. Host readings are kept from
// the first readable source only: the ranks of one host read the same
// machine. A source that cannot be opened is left out and a damaged one is
// merged up to its damage; the returned error names both, and the merged
// file is still written from what could be read.
func Merge(dst string, srcs []string) error {
	var rs []*Reader
	var errs []error
	for _, src := range srcs {
		r, err := Open(src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		defer r.Close()
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return fmt.Errorf("merge recordings: none could be read: %w", errors.Join(errs...))
	}
	h := Header{Source: "in-process, ranks merged", Host: rs[0].Header.Host, StartNs: rs[0].Header.StartNs}
	for _, r := range rs {
		h.StartNs = min(h.StartNs, r.Header.StartNs)
	}
	w, err := Create(dst, h)
	if err != nil {
		return err
	}
	heads := make([]*Entry, len(rs)) // each source's next entry; nil when it is done
	advance := func(i int) {
		e, err := rs[i].Next()
		heads[i] = &e
		if err != nil {
			heads[i] = nil
			if !errors.Is(err, io.EOF) {
				errs = append(errs, err)
			}
		}
	}
	for i := range rs {
		advance(i)
	}
	for i := earliest(heads); i >= 0; i = earliest(heads) {
		if e := heads[i]; e.Host == nil || i == 0 {
			w.Entry(*e)
		}
		advance(i)
	}
	if err := w.Close(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// earliest is the index of the earliest entry in heads (the first source
// on a tie), or -1 when all are done.
func earliest(heads []*Entry) int {
	at := -1
	for i, e := range heads {
		if e != nil && (at < 0 || e.T.Before(heads[at].T)) {
			at = i
		}
	}
	return at
}

// RankPath is the file rank writes its part of a recording at path to:
// FILE-rankR.EXT. The Python publisher names a rank's file the same way.
func RankPath(path string, rank int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-rank%d%s", strings.TrimSuffix(path, ext), rank, ext)
}
