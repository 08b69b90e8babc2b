package monitor

import (
	"fmt"

	"github.com/pipetop/pipetop/monitor/recording"
	"github.com/pipetop/pipetop/monitor/snapshot"
	"github.com/pipetop/pipetop/monitor/source"
)

// SaveReadings is the parts of s of the given sources, by source name, as
// a recording keeps them; a part that does not encode is left out and
// named in the error.
func SaveReadings(s *snapshot.Snapshot, parts []source.Part) (recording.Host, error) {
	h := recording.Host{}
	var err error
	for _, p := range parts {
		raw, e := p.Save(s)
		switch {
		case e != nil && err == nil:
			err = fmt.Errorf("save the %s readings: %w", p.Name(), e)
		case e == nil && raw != nil:
			h[p.Name()] = raw
		}
	}
	return h, err
}

// LoadReadings sets the parts of s that h holds, through the given parts
// (sources.Parts: every source this pipetop has). A name none of them has
// (a newer pipetop's source) is skipped; a part that does not decode is
// left as it was and named in the error.
func LoadReadings(h recording.Host, s *snapshot.Snapshot, parts []source.Part) error {
	var err error
	for _, p := range parts {
		raw, ok := h[p.Name()]
		if !ok {
			continue
		}
		if e := p.Load(s, raw); e != nil && err == nil {
			err = fmt.Errorf("load the recorded %s readings: %w", p.Name(), e)
		}
	}
	return err
}
