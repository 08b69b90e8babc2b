package summary

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pipetop/pipetop/metrics/stage"
)

// TestScriptTextHDF5: the end-of-run text has an hdf5 line per dataset,
// read back from the summary's JSON.
func TestScriptTextHDF5(t *testing.T) {
	doc := `{"schema":"` + ScriptSchema + `","name":"train","pid":7,"loader":{"source":"torch","workers":2,"hdf5":[
		{"file":"/d/robomimic.hdf5","path":"/data/demo_0/obs/agentview_image","shape":[150,84,84,3],"chunks":[150,84,84,3],
		 "dtype":"uint8","itemsize":1,"filter":"gzip","filter_opts":[4],"calls":1000,"chunks_decoded":1000,
		 "bytes_decoded":3175200000,"bytes_returned":21168000,"read_ns":5000000000,"forked_reads":1000,
		 "opened_before_fork":true,"read_amp":150},
		{"file":"/d/robomimic.hdf5","path":"/data/demo_0/actions","shape":[150,7],"chunks":[],"dtype":"float32","itemsize":4,
		 "filter":"none","calls":1000,"bytes_decoded":28000,"bytes_returned":28000,"read_amp":1}]}}`
	var s Script
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	WriteScriptText(&text, &s, "s.json")
	for _, want := range []string{
		"  hdf5: /data/demo_0/obs/agentview_image in robomimic.hdf5 chunks 150x84x84x3 gzip 4, 1000 reads (1.0 frames each), read amplification 150.0x (3.0 GiB decompressed for 20.2 MiB returned); 1000 reads through the file opened before the fork\n",
		"  hdf5: /data/demo_0/actions in robomimic.hdf5 contiguous none, 1000 reads (1.0 frames each), read amplification 1.0x",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if got := stage.HDF5ReadAmp(s.Loader); got < 149 || got > 150 {
		t.Errorf("the HDF5 datasets' read amplification together: %.1f, want 149.x", got)
	}
}
