package daemon

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// turnGaps runs one debate of quick fake agents to its end under a daemon
// with streams open page streams (half on the debate, half on the fleet),
// and returns the gaps between one attempt's end and the next one's start.
func turnGaps(b *testing.B, streams int) []time.Duration {
	b.Helper()
	dir := b.TempDir()
	cfg := testConfig(b, []string{fakeAgent("fa", "--chatter", "20"), fakeAgent("fb", "--chatter", "20")}, "")
	file := filepath.Join(dir, "gaps"+walkie.FileSuffix)
	if err := walkie.Init(file, walkie.InitOptions{ID: "gaps", Participants: []string{"fa", "fb"}, MaxRounds: 6,
		Briefing: []byte("Measure the gaps between turns.\n")}); err != nil {
		b.Fatal(err)
	}
	d := startDaemon(b, Options{Dir: dir, Config: cfg, Listen: "127.0.0.1:0", MaxStreams: streams + 8, HTTPMaxConns: 2*streams + 32})
	defer d.stop(b)
	sessiontest.WaitFor(b, 10*time.Second, "the daemon waits for the approval", func() bool {
		v := d.Debates()
		return len(v) == 1 && strings.Contains(v[0].Waiting, "not approved")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := "http://" + d.Addr()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	defer client.CloseIdleConnections()
	opened := make(chan error, streams)
	for i := range streams {
		url := base + "/events"
		if i%2 == 0 {
			url = base + "/d/" + walkie.Key(file) + "/events"
		}
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("stream %s: %s", url, resp.Status)
			}
			opened <- err
			if err != nil {
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 32<<10)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					return
				}
			}
		}()
	}
	for range streams {
		if err := <-opened; err != nil {
			b.Fatal(err)
		}
	}
	if _, err := walkie.Approve(file); err != nil {
		b.Fatal(err)
	}
	sessiontest.WaitFor(b, 2*time.Minute, "the debate ends", func() bool { return status(b, file) != walkie.StatusOpen && settled(b, file) })
	recs := turnLog(b, file)
	var gaps []time.Duration
	for i := 1; i < len(recs); i++ {
		gaps = append(gaps, recs[i].Started.Sub(recs[i-1].Ended))
	}
	return gaps
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkTurnGapsWith200Streams reports the median gap between one
// agent's end and the next one's start with 200 open page streams (100
// following the debate, 100 the fleet), against the same debate with
// none, measured in the same run: the page must not slow the turns.
func BenchmarkTurnGapsWith200Streams(b *testing.B) {
	var without, with []time.Duration
	for range b.N {
		without = append(without, turnGaps(b, 0)...)
		with = append(with, turnGaps(b, 200)...)
	}
	b.StopTimer()
	m0, m1 := median(without), median(with)
	b.ReportMetric(float64(m1)/float64(m0), "gap-ratio")
	b.ReportMetric(float64(m0.Microseconds())/1000, "gap-ms-0-streams")
	b.ReportMetric(float64(m1.Microseconds())/1000, "gap-ms-200-streams")
}
