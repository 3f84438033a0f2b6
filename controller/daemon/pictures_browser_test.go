package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/walkie-sh/walkie/controller/charts/chartstest"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// The pictures of the fleet page in Chromium (docs/operations.md shows
// the screenshots taken here; WALKIE_UPDATE_SCREENSHOT=1 writes them
// into docs/img).

// saveShot keeps a screenshot: in docs/img when asked, else in a
// temporary directory (so the capture itself is still tested).
func saveShot(t *testing.T, name string, png []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if os.Getenv("WALKIE_UPDATE_SCREENSHOT") != "" {
		path = filepath.Join("..", "..", "docs", "img", name)
	}
	if len(png) == 0 {
		t.Fatalf("%s: an empty screenshot", name)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shoot is a screenshot of the element sel, once the page's stream has
// opened and its first events have swapped the element in (the stream
// sends every part again on opening; a screenshot of the part replaced
// would find it gone).
func (tb *tab) shoot(sel string) []byte {
	tb.t.Helper()
	tb.waitFor("the stream", `!document.getElementById("live") || !document.getElementById("live").hidden`, 5*time.Second)
	settled := fmt.Sprintf(`(() => {
		const seen = window.__settled = window.__settled || {};
		const e = document.querySelector(%q), r = e && e.getBoundingClientRect();
		const was = seen[%q]; seen[%q] = e;
		return !!r && r.width > 0 && was === e; })()`, sel, sel, sel)
	tb.waitFor(sel+" settled", settled, 5*time.Second) // the same node twice, 20ms apart
	png, err := chromedp.Run(tb.ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		tb.t.Fatalf("screenshot of %s: %v", sel, err)
	}
	return png
}

// While fake agents play a debate, its page's timeline gains each new
// attempt by the stream: a bar more, without the page being read again.
func TestBrowserTimelineShowsANewAttempt(t *testing.T) {
	l := startLiveDebates(t)
	tb := newTab(t, 1000, 900)
	tb.open(l.url("/d/" + walkie.Key(l.played)))
	recorded := `document.querySelectorAll("#timeline rect.attempt:not(.out-running)").length`
	shown := eval[int](tb, `window.notReloaded = true; `+recorded)
	tb.waitFor("a new attempt on the timeline", fmt.Sprintf("%s > %d", recorded, shown), 30*time.Second)
	if !eval[bool](tb, "window.notReloaded === true") {
		t.Fatal("the page reloaded")
	}
	if logged := len(turnLog(t, l.played)); logged <= shown {
		t.Errorf("the timeline drew more attempts (%d) than the turn log has (%d)", shown+1, logged)
	}
	// The session at work is drawn too, while it runs.
	tb.waitFor("a running bar", `!!document.querySelector("#timeline rect.out-running")`, 30*time.Second)
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}

// Each picture, drawn from a recorded run, on a phone's screen: the
// debate's timeline, the round table's grid and quorum replay, the trials'
// histograms. The page's Content-Security-Policy allows no inline style:
// the charts keep their colours all the same (presentation attributes),
// and the browser reports nothing.
func TestBrowserPictures(t *testing.T) {
	dir := t.TempDir()
	debate, _ := chartstest.Debate(t, dir)
	table := chartstest.RoundTable(t, dir)
	trials := chartstest.Trials(t, dir)
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, "budget_usd: 1\n"), Listen: "127.0.0.1:0"})
	t.Cleanup(func() { d.stop(t) })
	base := "http://" + d.Addr()
	tb := newTab(t, 800, 900)
	// A phone's screen: headless Chromium's window is 500px at least.
	tb.do("a phone's viewport", chromedp.EmulateViewport(390, 844))

	tb.open(base + "/d/" + walkie.Key(debate))
	tb.waitFor("the timeline", `!!document.querySelector("#timeline svg")`, 5*time.Second)
	if got := eval[string](tb, `getComputedStyle(document.querySelector("#timeline rect.out-timeout")).fill`); got != "rgb(239, 108, 0)" {
		t.Errorf("the timeout's bar is drawn in %q, not its orange: the colours were dropped", got)
	}
	// The chart fits the phone's width, scaled down, not cut off.
	if w := eval[float64](tb, `document.querySelector("#timeline svg").getBoundingClientRect().width`); w <= 0 || w > 390 {
		t.Errorf("the timeline is %vpx wide on a 390px screen", w)
	}
	saveShot(t, "timeline.png", tb.shoot("#timeline"))

	tb.open(base + "/d/" + walkie.Key(table))
	tb.waitFor("the grid and the replay", `!!document.querySelector("#agreement svg") && !!document.querySelector("#quorum svg")`, 5*time.Second)
	if n := eval[int](tb, `document.querySelectorAll("#agreement rect.call-missed").length`); n != 1 {
		t.Errorf("%d missed verdicts on the grid, want cy's one", n)
	}
	saveShot(t, "roundtable-grid.png", tb.shoot("#agreement"))
	saveShot(t, "quorum-replay.png", tb.shoot("#quorum"))

	tb.open(base + "/")
	tb.waitFor("the trials' link", `!!document.querySelector("#trials a")`, 5*time.Second)
	tb.do("open the trials", chromedp.Click("#trials a"))
	tb.waitFor("the histograms", `!!document.querySelector("#distribution svg")`, 5*time.Second)
	if n := eval[int](tb, `document.querySelectorAll("#distribution rect.bar").length`); n == 0 {
		t.Error("the trials page has no bars")
	}
	if !strings.Contains(eval[string](tb, "document.body.innerText"), "Trials of eval: 5 copies") {
		t.Error("the trials page does not say it holds 5 copies")
	}
	saveShot(t, "trials.png", tb.shoot("#distribution"))
	_ = trials
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}

// A turn log whose names, outcome and detail are markup (an agent can
// write the log) draws a timeline that shows them as text and runs
// nothing, in the page and when the stream brings it again.
func TestBrowserHostileTimelineRunsNothing(t *testing.T) {
	dir := t.TempDir()
	file := newDebate(t, dir, "hostile", 3, "alice", "bob")
	postAs(t, file, "alice")
	sd := walkie.StateDir(file, "hostile")
	start := time.Now().Add(-time.Minute)
	write := func(agent, outcome, detail string) {
		t.Helper()
		if err := engine.AppendTurnLog(sd, engine.TurnRecord{Turn: 2, Round: 1, Agent: agent, Attempt: 1, Started: start, Ended: start.Add(10 * time.Second),
			Outcome: walkie.Outcome(outcome), Detail: detail}); err != nil {
			t.Fatal(err)
		}
	}
	write(`<img src=x onerror="alert('agent')">`, `"><svg onload="alert('outcome')">`, `</title><script>alert("detail")</script>`)
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, ""), Listen: "127.0.0.1:0"})
	t.Cleanup(func() { d.stop(t) })
	tb := newTab(t, 1000, 760)
	tb.open("http://" + d.Addr() + "/d/" + walkie.Key(file))
	tb.waitFor("the stream is open", `!document.getElementById("live").hidden`, 5*time.Second)
	write(`<script>alert('live')</script>`, "crashed", `<img src=y onerror="alert('live detail')">`)
	tb.waitFor("the live attempt", `document.querySelectorAll("#timeline rect.attempt").length === 2`, 10*time.Second)
	live := `document.querySelectorAll("#timeline script, #timeline img, #timeline foreignObject, #timeline [onload], #timeline [onerror]").length`
	if n := eval[int](tb, live); n != 0 {
		t.Errorf("the timeline holds %d live elements from the turn log", n)
	}
	if got := eval[string](tb, `document.querySelector("#timeline rect.attempt title").textContent`); !strings.Contains(got, `</title><script>alert("detail")</script>`) {
		t.Errorf("the detail is not shown as text: %q", got)
	}
	tb.do("poke the timeline", chromedp.Click("#timeline svg"))
	time.Sleep(300 * time.Millisecond) // a dialog or an error would arrive as an event meanwhile
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the hostile turn log made the browser report:\n%s", strings.Join(p, "\n"))
	}
}
