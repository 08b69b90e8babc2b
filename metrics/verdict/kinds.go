package verdict

import "github.com/pipetop/pipetop/metrics/stage"

// Severity says how a verdict reads: healthy, worth a look, or a bottleneck
// to fix. Panes colour a verdict by it.
type Severity int

// Severities, mildest first.
const (
	SeverityGood Severity = iota // nothing to fix
	SeverityWarn                 // not judged yet, or a moderate finding
	SeverityBad                  // a bottleneck, a hang or a failure on its way
)

// String names the severity ("good", "warn", "bad").
func (s Severity) String() string {
	switch s {
	case SeverityGood:
		return "good"
	case SeverityWarn:
		return "warn"
	}
	return "bad"
}

// Threshold is a named constant a rule compares a reading with.
type Threshold struct {
	Name  string
	Value float64
}

// KindInfo is one row of the verdict table.
type KindInfo struct {
	Kind     Kind
	Severity Severity
	// Healthy kinds say the pipeline keeps up: a healthy planted run may
	// get them and nothing else.
	Healthy bool
	// Anchor is the kind's row in docs/verdicts.md (an id there).
	Anchor string
	// Thresholds are the constants the kind's rule compares with;
	// docs/verdicts.md names each one with its value.
	Thresholds []Threshold
}

// Kinds is the verdict table in precedence order: when several rules find
// something, Judge keeps the finding whose kind comes first here.
var Kinds = []KindInfo{
	{ScriptFailed, SeverityBad, false, "script-failed", nil},
	{RankStopped, SeverityBad, false, "rank-stopped", []Threshold{{"RankStopFactor", RankStopFactor}, {"RankStopMinNs", RankStopMinNs}, {"RankSilentNs", RankSilentNs}}},
	{Straggler, SeverityBad, false, "straggler", []Threshold{{"StragglerGap", StragglerGap}, {"StragglerWait", StragglerWait}, {"MinSteps", MinSteps}}},
	{Starting, SeverityWarn, false, "starting", nil},
	{Stalled, SeverityBad, false, "stalled", []Threshold{{"StallFactor", StallFactor}, {"StallMinNs", StallMinNs}}},
	{WarmingUp, SeverityWarn, false, "warming-up", []Threshold{{"MinSteps", MinSteps}, {"MinJudgeNs", MinJudgeNs}, {"FoldInFlight", FoldInFlight}}},
	{MemoryFull, SeverityBad, false, "memory-full", []Threshold{{"GPUMemFull", GPUMemFull}}},
	{Swapping, SeverityBad, false, "swapping", []Threshold{{"HostMemFull", HostMemFull}, {"SwapInUse", SwapInUse}}},
	{MemoryCreep, SeverityBad, false, "memory-creep", []Threshold{{"CreepMinNs", CreepMinNs}, {"CreepMinPoints", CreepMinPoints},
		{"CreepMinBytes", CreepMinBytes}, {"CreepMinGrowth", CreepMinGrowth}, {"CreepFit", CreepFit}}},
	{GILBound, SeverityBad, false, "gil-bound", []Threshold{{"GILThreadShare", GILThreadShare}, {"GILOverTraining", GILOverTraining},
		{"GILMinProbes", GILMinProbes}, {"GILTrainingCPU", GILTrainingCPU}, {"GILSwitches", GILSwitches}, {"GILResultWait", GILResultWait},
		{"GPUBusyBound", GPUBusyBound}}},
	{Drift, SeverityBad, false, "drift", []Threshold{{"DriftSlower", DriftSlower}, {"DriftMinGrow", DriftMinGrow},
		{"BaselineNs", BaselineNs}, {"BaselineSkip", BaselineSkip}, {"DriftBaseNs", DriftBaseNs}, {"DriftBaseMin", DriftBaseMin}}},
	{Throttled, SeverityBad, false, "throttled", []Threshold{{"ThrottledPeriods", ThrottledPeriods}}},
	{LoaderTakesCores, SeverityBad, false, "loader-takes-cores", []Threshold{{"LoaderCores", LoaderCores}, {"HighReadAmp", HighReadAmp},
		{"InputShare", InputShare}, {"NetworkShare", NetworkShare}, {"GPUBusyBound", GPUBusyBound}, {"LoaderTrainWait", LoaderTrainWait}}},
	{Oversubscribed, SeverityBad, false, "oversubscribed", []Threshold{{"OversubDemand", OversubDemand}, {"OversubWait", OversubWait},
		{"OversubTrainDemand", OversubTrainDemand}, {"OversubTrainWait", OversubTrainWait}, {"OversubUsed", OversubUsed}, {"LoaderCores", LoaderCores},
		{"OversubPoolDemand", OversubPoolDemand}, {"OversubPoolWait", OversubPoolWait}}},
	{StorageBound, SeverityBad, false, "storage-bound", []Threshold{{"ColdShort", ColdShort}, {"SmallFile", SmallFile}}},
	{InputStalls, SeverityBad, false, "input-stalls", []Threshold{{"ModerateShare", ModerateShare}, {"WaitFloor", stage.WaitFloor},
		{"WaitOfStep", stage.WaitOfStep}, {"BurstySpike", stage.BurstySpike}, {"BurstyWaiting", stage.BurstyWaiting}, {"TypicalRank", stage.TypicalRank}, {"BurstyShare", stage.BurstyShare},
		{"MinPeriodWaits", stage.MinPeriodWaits}, {"PeriodAgree", stage.PeriodAgree}, {"BusyWorkers", BusyWorkers}, {"KeepUp", KeepUp}, {"WorkerStartMinNs", WorkerStartMinNs}}},
	{InputBound, SeverityBad, false, "input-bound", []Threshold{{"InputShare", InputShare}, {"HighReadAmp", HighReadAmp}, {"BusyWorkers", BusyWorkers}, {"KeepUp", KeepUp},
		{"HotShare", stage.HotShare}, {"MinHotSamples", stage.MinHotSamples}}},
	{GPUBound, SeverityGood, true, "gpu-bound", []Threshold{{"GPUBusyBound", GPUBusyBound}}},
	{PreprocessBound, SeverityBad, false, "preprocess-bound", []Threshold{{"PreprocessShare", PreprocessShare}, {"HotShare", stage.HotShare}, {"MinHotSamples", stage.MinHotSamples}}},
	{TrainingThreadBound, SeverityBad, false, "training-thread-bound", []Threshold{{"TrainingThreadBusy", TrainingThreadBusy},
		{"OtherThreadsIdle", OtherThreadsIdle}, {"IdleCoresFree", IdleCoresFree}, {"ModerateShare", ModerateShare}, {"LaunchGPUBusy", LaunchGPUBusy}}},
	{LaunchBound, SeverityBad, false, "launch-bound", []Threshold{{"NetworkShare", NetworkShare}, {"LaunchGPUBusy", LaunchGPUBusy}}},
	{SyncBound, SeverityBad, false, "sync-bound", []Threshold{{"SyncShare", SyncShare}}},
	{Untimed, SeverityBad, false, "untimed", []Threshold{{"OtherShare", OtherShare}, {"HotShare", stage.HotShare}, {"MinHotSamples", stage.MinHotSamples}, {"CheckpointMinB", CheckpointMinB}}},
	{StageBound, SeverityBad, false, "stage-bound", []Threshold{{"SingleStageShare", SingleStageShare}, {"EvalShare", EvalShare}}},
	{ModerateInput, SeverityWarn, false, "moderately-input-bound", []Threshold{{"ModerateShare", ModerateShare}}},
	{Contention, SeverityBad, false, "contention", []Threshold{{"BesideCores", BesideCores}, {"NetworkShare", NetworkShare}, {"BusyWorkers", BusyWorkers}}},
	{ComputeBound, SeverityBad, true, "compute-bound", []Threshold{{"NetworkShare", NetworkShare}, {"BesideCores", BesideCores}}},
	{Balanced, SeverityGood, true, "balanced", nil},
}

// rule is one verdict rule: what it finds in the inputs, if anything.
type rule func(in *Inputs) (Verdict, bool)

// rules are every rule Judge applies: the ranks', the time rules, the host
// rules and the window's throughput rules. Their order only breaks ties
// between findings of the same kind.
var rules = []rule{stoppedRule, rankRule, startRule, stallRule, warmRule, memoryRule, driftRule, throttledRule, oversubscribedRule, trainingThreadRule, loaderCoresRule, steadyRule,
	gilRule}

// kindRank is each kind's place in Kinds.
var kindRank = func() map[Kind]int {
	m := make(map[Kind]int, len(Kinds))
	for i, k := range Kinds {
		m[k.Kind] = i
	}
	return m
}()

// InfoOfKind returns the table row of k; ok is false for a kind the table
// does not list (one read from a newer pipetop's JSON).
func InfoOfKind(k Kind) (KindInfo, bool) {
	i, ok := kindRank[k]
	if !ok {
		return KindInfo{Kind: k, Severity: SeverityBad}, false
	}
	return Kinds[i], true
}

// Precedence is k's place in Kinds, 0 first; unknown kinds come last.
func Precedence(k Kind) int {
	if i, ok := kindRank[k]; ok {
		return i
	}
	return len(Kinds)
}

// Severity is how the verdict reads, from the verdict table; an unknown
// kind reads as bad.
func (v Verdict) Severity() Severity {
	k, _ := InfoOfKind(v.Kind)
	return k.Severity
}

// Healthy reports whether the verdict says the pipeline keeps up.
func (v Verdict) Healthy() bool {
	k, _ := InfoOfKind(v.Kind)
	return k.Healthy
}
