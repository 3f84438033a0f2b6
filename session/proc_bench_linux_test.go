package session

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkListSession is what every session's end pays to find what the
// session left (killSession): this process's session listed with the
// getsid filter, against every process read in full (listProcs, what it
// was before the filter), taken in turns in the same run.
//
//	go test ./session -run '^$' -bench ListSession
func BenchmarkListSession(b *testing.B) {
	sid, err := unix.Getsid(0)
	if err != nil {
		b.Fatal(err)
	}
	var filtered, all time.Duration
	for range b.N {
		t0 := time.Now()
		if _, err := listSession(sid); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := listProcs(); err != nil {
			b.Fatal(err)
		}
		filtered, all = filtered+t1.Sub(t0), all+time.Since(t1)
	}
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(us(filtered), "us/list")
	b.ReportMetric(us(all), "all-us/list")
	b.ReportMetric(float64(filtered)/float64(all), "session/all")
}
