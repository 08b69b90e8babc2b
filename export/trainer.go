package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pipetop/pipetop/monitor/source"

	"github.com/pipetop/pipetop/metrics/stage"
	"github.com/pipetop/pipetop/monitor/snapshot"
)

// cudaEvents is the source label of the trainer's own GPU times.
const cudaEvents = "cuda_events"

func trainerDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"trainer", "pid"}, extra...), nil)
}

var (
	connectedDesc = trainerDesc("pipetop_trainer_connected",
		"1 while frames arrive from the trainer, 0 once it is gone (its other metrics are then withdrawn).")
	startDesc = trainerDesc("pipetop_trainer_start_time_seconds",
		"Start time of the trainer process, Unix seconds.")
	droppedDesc = trainerDesc("pipetop_trainer_dropped_frames_total",
		"Frames the trainer dropped for this viewer because it read too slowly.")
	gpuBusyDesc = trainerDesc("pipetop_trainer_gpu_busy_ratio",
		"GPU busy time per step (the trainer's CUDA events) over the mean step wall time.", "source")
	verdictDesc = trainerDesc("pipetop_verdict",
		"The bottleneck verdict over the window: 1 for the current kind and the stage it names.", "kind", "stage")
)

// summaryMetric is one number of the window summary; ok is false when the
// summary does not know it.
type summaryMetric struct {
	desc *prometheus.Desc
	get  func(*stage.Summary) (v float64, ok bool)
}

var summaryMetrics = []summaryMetric{
	{trainerDesc("pipetop_trainer_window_steps", "Steps in the summary window (--window)."),
		func(s *stage.Summary) (float64, bool) { return float64(s.Steps), true }},
	{trainerDesc("pipetop_trainer_last_step", "Number of the newest step."),
		func(s *stage.Summary) (float64, bool) { return float64(s.LastStep), true }},
	{trainerDesc("pipetop_trainer_steps_per_second", "Steps per second over the window."),
		func(s *stage.Summary) (float64, bool) { return s.StepsPerSec, s.SpanNs > 0 }},
	{trainerDesc("pipetop_trainer_samples_per_second", "Samples per second over the window; absent when the trainer does not count samples."),
		func(s *stage.Summary) (float64, bool) { return s.SamplesPerSec, s.SpanNs > 0 && s.SamplesPerSec > 0 }},
	{trainerDesc("pipetop_trainer_step_wall_mean_seconds", "Mean wall time of a step over the window."),
		func(s *stage.Summary) (float64, bool) { return source.Seconds(s.WallMean), true }},
	{trainerDesc("pipetop_trainer_step_wall_p50_seconds", "Median wall time of a step over the window."),
		func(s *stage.Summary) (float64, bool) { return source.Seconds(s.WallP50), true }},
	{trainerDesc("pipetop_trainer_step_wall_p99_seconds", "99th percentile wall time of a step over the window."),
		func(s *stage.Summary) (float64, bool) { return source.Seconds(s.WallP99), true }},
	{trainerDesc("pipetop_trainer_loss", "Loss of the newest step that reported one."),
		func(s *stage.Summary) (float64, bool) { return float64(s.LastLoss), s.HasLoss }},
}

// stageMetric is one number per stage.
type stageMetric struct {
	desc *prometheus.Desc
	get  func(*stage.StageStat) (v float64, ok bool)
}

var stageMetrics = []stageMetric{
	{trainerDesc("pipetop_trainer_stage_mean_seconds", "Mean CPU wall time of the stage per step.", "stage"),
		func(s *stage.StageStat) (float64, bool) { return source.Seconds(s.Mean), true }},
	{trainerDesc("pipetop_trainer_stage_p50_seconds", "Median CPU wall time of the stage per step.", "stage"),
		func(s *stage.StageStat) (float64, bool) { return source.Seconds(s.P50), true }},
	{trainerDesc("pipetop_trainer_stage_p99_seconds", "99th percentile CPU wall time of the stage per step.", "stage"),
		func(s *stage.StageStat) (float64, bool) { return source.Seconds(s.P99), true }},
	{trainerDesc("pipetop_trainer_stage_share_ratio", "The stage's mean over the mean step wall time.", "stage"),
		func(s *stage.StageStat) (float64, bool) { return s.Share, true }},
}

// stageGPUMetrics carry a source label: the times come from CUDA events.
var stageGPUMetrics = []stageMetric{
	{trainerDesc("pipetop_trainer_stage_gpu_mean_seconds", "Mean GPU time of the stage per step.", "stage", "source"),
		func(s *stage.StageStat) (float64, bool) { return source.Seconds(s.GPUMean), s.HasGPU }},
	{trainerDesc("pipetop_trainer_stage_gpu_p99_seconds", "99th percentile GPU time of the stage per step.", "stage", "source"),
		func(s *stage.StageStat) (float64, bool) { return source.Seconds(s.GPUP99), s.HasGPU }},
}

// trainer sends the trainer's link state and, while it is connected, its
// window summary, verdict and loader statistics. A disconnected trainer's
// last window is history, not a reading: only connected 0 remains.
func (e emitter) trainer(s *snapshot.Snapshot) {
	t := s.Trainer
	if t == nil {
		return
	}
	id := []string{t.Name, source.Itoa(t.PID)}
	if s.Link.State != snapshot.LinkConnected {
		e.Gauge(connectedDesc, 0, id...)
		return
	}
	e.Gauge(connectedDesc, 1, id...)
	e.Counter(droppedDesc, float64(t.Dropped), id...)
	if t.Started != nil {
		e.Gauge(startDesc, float64(t.Started.Unix())+source.Seconds(float64(t.Started.Nanosecond())), id...)
	}
	if s.Summary != nil {
		e.summary(s.Summary, id)
	}
	if v := s.Verdict; v != nil {
		e.Gauge(verdictDesc, 1, append(id, string(v.Kind), v.Stage)...)
	}
	if s.Loader != nil {
		e.loader(s.Loader, id)
	}
}

func (e emitter) summary(sum *stage.Summary, id []string) {
	for _, m := range summaryMetrics {
		if v, ok := m.get(sum); ok {
			e.Gauge(m.desc, v, id...)
		}
	}
	if sum.HasGPU {
		e.Gauge(gpuBusyDesc, sum.GPUBusy, append(id, cudaEvents)...)
	}
	for i := range sum.Stages {
		st := &sum.Stages[i]
		labels := append(id[:len(id):len(id)], st.Name)
		for _, m := range stageMetrics {
			if v, ok := m.get(st); ok {
				e.Gauge(m.desc, v, labels...)
			}
		}
		for _, m := range stageGPUMetrics {
			if v, ok := m.get(st); ok {
				e.Gauge(m.desc, v, append(labels, cudaEvents)...)
			}
		}
	}
}
