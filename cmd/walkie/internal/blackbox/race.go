//go:build race

package blackbox

// raceEnabled: the tests run with the race detector, and so does walkie.
const raceEnabled = true
