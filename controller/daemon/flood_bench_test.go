package daemon

import (
	"slices"
	"testing"
	"time"
)

// newClientLatency is how long each of n new clients takes to connect and
// read /api/debates. Each keeps its connection open afterwards, as a
// browser does, so at the cap every one of them takes an idle one's place.
func newClientLatency(b *testing.B, addr string, n int) []time.Duration {
	b.Helper()
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		c := dialFrom(b, addr, "")
		if code, body := c.getAll(b, "/api/debates"); code != 200 {
			b.Fatalf("a new client: %d %s", code, body)
		}
		out = append(out, time.Since(start))
	}
	return out
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkNewClientAtTheCap reports how long a new client takes to get
// /api/debates from a daemon whose every place is held (as many event
// streams as it takes, the rest idle keep-alive connections), against
// the same daemon before the flood, in the same run, with the daemon's
// real timeouts. Before issue 27 item 11 such a client waited for the
// idle timeout (30 s), or for good.
func BenchmarkNewClientAtTheCap(b *testing.B) {
	const clients = 200
	var quiet, flooded []time.Duration
	for range b.N {
		d, _ := httpDaemon(b, Options{})
		quiet = append(quiet, newClientLatency(b, d.Addr(), clients)...)
		openStreams(b, d.Addr(), "", d.o.MaxStreams)
		for range d.o.HTTPMaxConns {
			if code, _ := dialFrom(b, d.Addr(), "").getAll(b, "/healthz"); code != 200 {
				b.Fatalf("an idle connection: %d", code)
			}
		}
		flooded = append(flooded, newClientLatency(b, d.Addr(), clients)...)
		d.stop(b)
	}
	b.StopTimer()
	q50, f50 := percentile(quiet, 0.5), percentile(flooded, 0.5)
	b.ReportMetric(float64(f50)/float64(q50), "p50-ratio")
	b.ReportMetric(float64(q50.Microseconds())/1000, "p50-ms-quiet")
	b.ReportMetric(float64(f50.Microseconds())/1000, "p50-ms-at-cap")
	b.ReportMetric(float64(percentile(flooded, 0.99).Microseconds())/1000, "p99-ms-at-cap")
}
