// Package diagnosis is the planted-bottleneck suite: each test starts a
// real publisher (the synthetic Go publisher in planted mode, the Python
// publisher, or pipetrain over a generated dataset) with one bottleneck
// planted, reads `pipetop --json` and checks the verdict's kind, the stage
// it names and its next step. Healthy runs must not get a scary verdict.
// docs/verdicts.md describes the rules these scenarios exercise.
package diagnosis
