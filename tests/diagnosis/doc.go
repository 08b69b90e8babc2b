// Package diagnosis is the planted-bottleneck suite: each test starts a
// real publisher (the synthetic Go publisher in planted mode, the Python
// publisher, or pipetrain over a generated dataset) with one bottleneck
// planted, reads `pipetop --json` and checks the verdict's kind, the stage
// it names and its next step. Healthy runs must not get a scary verdict.
// docs/verdicts.md describes the rules these scenarios exercise.
//
// Each test says whether it reads the machine's CPU. Those that do
// (testkit.Serial) run alone, after every other package's tests: their
// plants are judged on what the CPU did, which a test beside them would
// change — CPU shares, threads waiting for a CPU and idle cores
// (TestCPUVerdicts, TestCPUVerdictsAtTheEnd, TestGILVerdicts), workers'
// busy shares against the training step (TestFloatImagesFromWorkers,
// TestManyTensorsFromWorkers, the scenarios of TestPlantedBottlenecks,
// which run together), a run's speed against its first seconds (the
// drift scenario of TestPlantedBottlenecks), pauses against the steps
// around them (TestPeriodicPauses, TestEpochStart: a loaded machine
// stretches the steps until a pause no longer stands out) and the ranks'
// step times against their noise (the straggler tests). The others
// (testkit.Concurrent) are judged on what they plant themselves — stops,
// hangs, processes, a cgroup's own CPU quota (TestThrottledAtTheEnd), the
// GIL controls no load makes hold it (TestGILControls) — and run in
// parallel, beside the other packages. A plant judged on its own timeline
// but not on the CPU it shares is judged from a run recorded once
// (testdata/*.pipetop; TestNoDriftFromTheStart; -update records it from
// the live plant again); the Python drift plant's recorded run, live and
// at the end, is tests/sameverdict's.
package diagnosis
