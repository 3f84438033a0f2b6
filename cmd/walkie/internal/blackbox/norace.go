//go:build !race

package blackbox

// raceEnabled: the tests run without the race detector.
const raceEnabled = false
