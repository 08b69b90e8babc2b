// Package diagnosis is the planted-bottleneck suite: each test starts a
// real publisher (the synthetic Go publisher in planted mode, the Python
// publisher, or pipetrain over a generated dataset) with one bottleneck
// planted, reads `pipetop --json` and checks the verdict's kind, the stage
// it names and its next step. Healthy runs must not get a scary verdict.
// docs/verdicts.md describes the rules these scenarios exercise.
//
// make test runs this package alone (no other package's tests beside it),
// and in it the tests that call t.Parallel() (the package runs with
// -parallel 4) only after the others. The others stay serial because their
// plants are judged on what the machine's CPU did, which a test beside
// them would change: CPU shares, threads waiting for a CPU and idle cores
// (TestCPUVerdicts, TestCPUVerdictsAtTheEnd, TestGILVerdicts), workers'
// busy shares against the training step (TestFloatImagesFromWorkers,
// TestManyTensorsFromWorkers, the scenarios of TestPlantedBottlenecks,
// which run together), a healthy run that must not drift
// (TestNoDriftFromTheStart) and the ranks' step times against their noise
// (the straggler tests). The parallel ones are judged on what they plant
// themselves: stops, hangs, processes, periodic pauses and a planted
// slow-down.
package diagnosis
