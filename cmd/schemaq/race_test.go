//go:build race

package main

// raceDetector: the race detector slows Go code about tenfold; tests at
// the sizes users bring run without it (.ci/run runs them so).
const raceDetector = true
