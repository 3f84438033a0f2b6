//go:build linux && !race

package realcli

var raceFlags []string
