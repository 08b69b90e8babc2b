package export

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// trainerLabels name one trainer process's series: the same labels for
// every rank of a run on every host, so that Prometheus can add them up
// and a restart continues the same series (as a counter reset).
var trainerLabels = []string{"trainer", "run", "rank"}

func trainerDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(trainerLabels[:len(trainerLabels):len(trainerLabels)], extra...), nil)
}

var (
	infoDesc = trainerDesc("pipetop_trainer_info",
		"Always 1: the trainer process's pid (in its own namespace), world size (empty for a single process) and the exporter's host name.", "pid", "world_size", "host")
	connectedDesc = trainerDesc("pipetop_trainer_connected",
		"1 while frames arrive from the trainer, 0 once it is gone (its other metrics are then withdrawn).")
	startDesc = trainerDesc("pipetop_trainer_start_time_seconds",
		"Start time of the trainer process, Unix seconds; a new value means the counters started again.")
	droppedDesc = trainerDesc("pipetop_trainer_dropped_frames_total",
		"Frames the trainer dropped for this viewer because it read too slowly.")
	stepsDesc = trainerDesc("pipetop_trainer_steps_total",
		"Training steps of this trainer process the viewer received.")
	samplesDesc = trainerDesc("pipetop_trainer_samples_total",
		"Samples in those steps; absent when the trainer does not count samples.")
	stageSecondsDesc = trainerDesc("pipetop_trainer_stage_seconds_total",
		"Time spent in each stage of those steps: CPU wall time (clock=cpu) and, from CUDA events, GPU time (clock=gpu).", "stage", "clock")
	wallDesc = trainerDesc("pipetop_trainer_step_wall_seconds",
		"Wall time of each step.")
	dataWaitDesc = trainerDesc("pipetop_trainer_data_wait_seconds",
		"Time each step waited for its batch (the data_wait stage).")
	lastStepDesc = trainerDesc("pipetop_trainer_last_step",
		"Number of the newest step.")
	lastStepTimeDesc = trainerDesc("pipetop_trainer_last_step_time_seconds",
		"When the newest step ended, Unix seconds (the trainer's clock).")
	lossDesc = trainerDesc("pipetop_trainer_loss",
		"Loss of the newest step that reported one.")
	verdictDesc = trainerDesc("pipetop_verdict",
		"The bottleneck verdict over the --window: 1 for the current kind and the stage it names.", "kind", "stage")
	verdictAlsoDesc = trainerDesc("pipetop_verdict_also",
		"The run's other costs the verdict names beside its kind (also: ...): each one's share of the run's time, 0 for a finding that is not a time (memory creep).", "kind", "stage")
)

// trainerDescs lists the descriptor of every trainer metric.
func trainerDescs() []*prometheus.Desc {
	return []*prometheus.Desc{infoDesc, connectedDesc, startDesc, droppedDesc, stepsDesc, samplesDesc,
		stageSecondsDesc, wallDesc, dataWaitDesc, lastStepDesc, lastStepTimeDesc, lossDesc, verdictDesc, verdictAlsoDesc,
		loaderWorkersDesc, loaderBusyDesc, loaderQueueDesc, loaderQueueCapDesc, loaderCacheDesc,
		loaderReadDesc, loaderDecodedDesc, loaderUsedDesc, loaderSecondsDesc, loaderErrorsDesc}
}

// trainerID returns the values of trainerLabels: rank is empty for a
// single-process trainer.
func trainerID(t *snapshot.Trainer) []string {
	rank := ""
	if t.Rank != nil {
		rank = strconv.Itoa(*t.Rank)
	}
	return []string{t.Name, t.Run, rank}
}

// trainer sends the link state of one trainer process (the snapshot's
// single trainer or one rank of its run; host: the info metric's host
// label) and, while it is connected, its totals, verdict and loader
// statistics. A disconnected trainer's last state is history, not a
// reading: only connected 0 remains.
func (e Emitter) trainer(r *snapshot.Rank, host string) {
	t := r.Trainer
	if t == nil {
		return
	}
	id := trainerID(t)
	if r.Link != snapshot.LinkConnected {
		e.Gauge(connectedDesc, 0, id...)
		return
	}
	e.Gauge(connectedDesc, 1, id...)
	world := ""
	if t.WorldSize > 0 {
		world = Itoa(t.WorldSize)
	}
	e.Gauge(infoDesc, 1, append(id, Itoa(t.PID), world, host)...)
	e.Counter(droppedDesc, float64(t.Dropped), id...)
	if t.Started != nil {
		e.Gauge(startDesc, float64(t.Started.Unix())+Seconds(float64(t.Started.Nanosecond())), id...)
	}
	if r.Totals != nil {
		e.totals(r.Totals, id)
	}
	if sum := r.Summary; sum != nil {
		e.Gauge(lastStepDesc, float64(sum.LastStep), id...)
		if sum.HasLoss {
			e.Gauge(lossDesc, float64(sum.LastLoss), id...)
		}
	}
	if v := r.Verdict; v != nil {
		e.Gauge(verdictDesc, 1, append(id, string(v.Kind), v.Stage)...)
		for _, c := range v.Also {
			e.Gauge(verdictAlsoDesc, c.Share, append(id[:len(id):len(id)], string(c.Kind), c.Stage)...)
		}
	}
	if r.Loader != nil {
		e.loader(r.Loader, id)
	}
}

// totals sends the counters and histograms of one trainer process.
func (e Emitter) totals(t *stage.Totals, id []string) {
	e.Counter(stepsDesc, float64(t.Steps), id...)
	if t.Samples > 0 {
		e.Counter(samplesDesc, float64(t.Samples), id...)
	}
	for i := range t.Stages {
		st := &t.Stages[i]
		labels := append(id[:len(id):len(id)], st.Name, "cpu")
		e.Counter(stageSecondsDesc, Seconds(float64(st.CPUNs)), labels...)
		if st.HasGPU {
			labels[len(labels)-1] = "gpu"
			e.Counter(stageSecondsDesc, Seconds(float64(st.GPUNs)), labels...)
		}
	}
	if t.LastEndNs > 0 {
		e.Gauge(lastStepTimeDesc, Seconds(float64(t.LastEndNs)), id...)
	}
	e.Ch <- newHistogram(wallDesc, &t.Wall, id)
	if t.HasDataWait {
		e.Ch <- newHistogram(dataWaitDesc, &t.DataWait, id)
	}
}
