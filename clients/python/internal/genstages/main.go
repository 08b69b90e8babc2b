// Command genstages writes the Python publisher's stage module from the
// stage table: go generate ./clients/python runs it in clients/python.
package main

import (
	"fmt"
	"os"

	"github.com/pipetop/pipetop/clients/python/internal/stagespy"
)

func main() {
	if err := os.WriteFile(stagespy.Path, stagespy.Source(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genstages:", err)
		os.Exit(1)
	}
}
