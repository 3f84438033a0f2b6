//go:build race

package scaleout

var raceFlags = []string{"-race"}
