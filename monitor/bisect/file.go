package bisect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// ReportFile is the report's name in a pipetop bisect --record directory,
// beside each phase's recording (PHASE.pipetop).
const ReportFile = "bisect.json"

// Locate is the bisect report path names: a --record directory's
// ReportFile, or path itself when it is a bisect report; ok is false when
// path is neither (a run's recording or summary). A file that claims a
// bisect schema of another version is located too, so that reading it
// says which schema it has.
func Locate(path string) (file string, ok bool) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return filepath.Join(path, ReportFile), true
	}
	return path, claimsSchema(path)
}

// claimsSchema is whether the first JSON value in the file at path is an
// object whose schema is a bisect report's, of any version; a file that
// cannot be read or decoded does not.
func claimsSchema(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head struct {
		Schema string `json:"schema"`
	}
	if json.NewDecoder(f).Decode(&head) != nil {
		return false
	}
	return strings.HasPrefix(head.Schema, schemaFamily)
}

// schemaFamily begins the schema of every version of a bisect report.
const schemaFamily = "pipetop-bisect/"
