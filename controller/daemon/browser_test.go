package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// The fleet page in a real headless Chromium (Debian's chromium package,
// which scripts/install-chromium.sh installs and `make test` runs). With
// CI set, a missing Chromium fails these tests instead of skipping them.

// chromiumPath finds the browser: WALKIE_CHROMIUM, else on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WALKIE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	sessiontest.Need(t, errors.New("no Chromium on PATH: run scripts/install-chromium.sh (make test does), or set WALKIE_CHROMIUM"))
	return ""
}

// tab is one page in a fresh headless Chromium, with every console
// message and dialog it produced.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
	dialogs []string
}

// newTab starts Chromium with a fresh profile and no network beyond this
// machine's loopback (the machine's network is closed, and the browser
// must not wait for it).
func newTab(t *testing.T, width, height int) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	tb := &tab{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.console = append(tb.console, m)
			tb.mu.Unlock()
		}
	}()
	go func() {
		for e, err := range dialogs {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.dialogs = append(tb.dialogs, string(e.Type)+": "+e.Message)
			tb.mu.Unlock()
			// Dismiss it, or the page would wait for a person forever.
			go chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				_, err := cdp.Call(ctx, t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
				return err
			}))
		}
	}()
	return tb
}

func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.do("open "+url, chromedp.Navigate(url), chromedp.WaitReady("body"))
}

// eval runs a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition in the page (every 20ms, bounded)
// until it holds. A page that is navigating meanwhile (a reload) fails an
// evaluation; the poll goes on.
func (tb *tab) waitFor(what, expr string, d time.Duration) {
	tb.t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tb.ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	tb.t.Fatalf("%s: not within %v (last error: %v); the page says:\n%s", what, d, last, body)
}

// problems are the console errors, warnings, exceptions and dialogs so far.
func (tb *tab) problems() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := append([]string(nil), tb.dialogs...)
	for _, m := range tb.console {
		switch m.Type {
		case chromedp.ConsoleLog, chromedp.ConsoleType("info"), chromedp.ConsoleType("debug"), chromedp.ConsoleType("verbose"):
			continue
		}
		out = append(out, m.String()+" ("+m.Source+" "+m.URL+")")
	}
	return out
}

// liveDebates is a daemon with three debates the page must list: one that
// waits for a person, one its fake agents play slowly, and one run by a
// separate controller (as `walkie auto` would) outside its directory,
// found through the registry.
type liveDebates struct {
	d                     *running
	waiting, played, auto string
	autoDone              chan error
}

func startLiveDebates(t *testing.T, agentFlags ...string) *liveDebates {
	t.Helper()
	dir, elsewhere, registry := t.TempDir(), t.TempDir(), t.TempDir()
	flags := append([]string{"--chatter", "3", "--delay", "1s", "--body", "A **bold** claim with `code`.\n\nSecond paragraph."}, agentFlags...)
	cfg := testConfig(t, []string{fakeAgent("fa", flags...), fakeAgent("fb", append(flags, "--sign")...)}, "")
	l := &liveDebates{
		waiting: newDebate(t, dir, "alpha", 3, "alice", "bob"),
		played:  newDebate(t, dir, "beta", 3, "fa", "fb"),
		// Rounds enough to be still at work when a slow browser opens
		// the page; the run is cancelled at the test's end.
		auto: newDebate(t, elsewhere, "gamma", 6, "fa", "fb"),
	}
	l.d = startDaemon(t, Options{Dir: dir, Config: cfg, Listen: "127.0.0.1:0", Registry: registry})
	t.Cleanup(func() { l.d.stop(t) })
	ctx, cancel := context.WithCancel(context.Background())
	l.autoDone = make(chan error, 1)
	go func() {
		_, err := controller.Run(ctx, controller.Options{File: l.auto, Config: cfg, Registry: registry, By: "walkie auto", Log: testLogger(t)})
		l.autoDone <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-l.autoDone; err != nil {
			t.Errorf("the auto run: %v", err)
		}
	})
	return l
}

func (l *liveDebates) url(path string) string { return "http://" + l.d.Addr() + path }

// The fleet page lists every debate: the daemon's own and, behind the
// switch (?all=1), the one another controller runs, with whose turn it
// is, the round of the cap, the cost, why one waits and what a running
// agent is doing.
func TestBrowserFleetListsDebates(t *testing.T) {
	l := startLiveDebates(t)
	tb := newTab(t, 1100, 800)
	tb.open(l.url("/?all=1"))
	row := func(file string) string { return "document.getElementById('row-" + walkie.Key(file) + "')" }
	tb.waitFor("three rows", row(l.waiting)+" && "+row(l.played)+" && "+row(l.auto), 5*time.Second)
	alpha := eval[string](tb, row(l.waiting)+".innerText")
	for _, want := range []string{"alpha", "open", "→ alice", "1 of 3", "waiting for alice: walkie post"} {
		if !strings.Contains(alpha, want) {
			t.Errorf("alpha's row lacks %q:\n%s", want, alpha)
		}
	}
	// The auto run's agent shows up while it works, from activity.json.
	tb.waitFor("the auto run's agent at work", row(l.auto)+".innerText.includes('writing turn')", 10*time.Second)
	gamma := eval[string](tb, row(l.auto)+".innerText")
	for _, want := range []string{"gamma", "run by walkie auto, pid " + strconv.Itoa(os.Getpid()), "of 6"} {
		if !strings.Contains(gamma, want) {
			t.Errorf("gamma's row lacks %q:\n%s", want, gamma)
		}
	}
	// And the page follows the played debate to its end without a reload.
	eval[bool](tb, "window.notReloaded = true")
	tb.waitFor("beta ended on the page", row(l.played)+".querySelector('.badge').innerText !== 'open'", 30*time.Second)
	if !eval[bool](tb, "window.notReloaded === true") {
		t.Error("the page reloaded")
	}
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}

// A turn recorded while the debate's page is open appears on it within a
// second of its stamp, without a reload; the screenshot for
// docs/operations.md is taken here, of this real run.
func TestBrowserTurnAppearsLive(t *testing.T) {
	l := startLiveDebates(t)
	tb := newTab(t, 1000, 1000) // tall enough to show the timeline and the first entries
	tb.open(l.url("/d/" + walkie.Key(l.played)))
	// Stamp each entry's arrival in the page's own clock.
	eval[bool](tb, `window.notReloaded = true;
		window.arrived = {};
		for (const e of document.querySelectorAll("#entries .entry")) window.arrived[e.id] = -1; // drawn by the server
		new MutationObserver(() => { for (const e of document.querySelectorAll("#entries .entry")) if (!(e.id in window.arrived)) window.arrived[e.id] = Date.now(); })
			.observe(document.getElementById("entries"), {childList: true}); true`)
	shown := eval[int](tb, `document.querySelectorAll("#entries .entry").length`)
	tb.waitFor("two more entries", fmt.Sprintf(`document.querySelectorAll("#entries .entry").length >= %d`, shown+2), 30*time.Second)
	if !eval[bool](tb, "window.notReloaded === true") {
		t.Fatal("the page reloaded")
	}
	doc, err := walkie.Load(l.played)
	if err != nil {
		t.Fatal(err)
	}
	arrived := eval[map[string]float64](tb, "window.arrived")
	checked := 0
	for _, e := range doc.Entries {
		at, ok := arrived["e-"+strconv.Itoa(e.Marker.Seq)]
		if !ok || at < 0 {
			continue
		}
		checked++
		lag := time.UnixMilli(int64(at)).Sub(e.Marker.At)
		t.Logf("entry %d appeared %v after its stamp", e.Marker.Seq, lag)
		if lag > time.Second {
			t.Errorf("entry %d appeared %v after it was recorded, want within a second", e.Marker.Seq, lag)
		}
	}
	if checked == 0 {
		t.Fatal("no entry arrived while the page was open")
	}
	// The markdown is rendered, the source and the turn log are there.
	first := eval[string](tb, `document.querySelector("#entries .entry").innerHTML`)
	if !strings.Contains(first, "<strong>bold</strong>") || !strings.Contains(first, "<code>code</code>") || !strings.Contains(first, `class="src"`) {
		t.Errorf("the first entry is not rendered markdown with its source:\n%s", first)
	}
	tb.waitFor("the turn log has the attempts", `document.querySelectorAll("#turns tr").length >= 2`, 5*time.Second)
	if got := eval[string](tb, `document.querySelector("#turns tr a").getAttribute("href")`); !strings.Contains(got, "/transcript/0") {
		t.Errorf("the turn log's transcript link is %q", got)
	}
	tb.waitFor("the debate ends", `document.querySelector("#status .badge").innerText !== "open"`, 30*time.Second)
	// The one change to the real page: the test's temporary directory
	// would put this machine's path into the docs.
	eval[bool](tb, `document.querySelector("h1 small").textContent = "~/debates/beta.walkie.md"; true`)
	shot, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fleet-debate.png")
	if os.Getenv("WALKIE_UPDATE_SCREENSHOT") != "" {
		path = filepath.Join("..", "..", "docs", "img", "fleet-debate.png")
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}

// The halt button halts a running debate: the state says halted with the
// reason typed, the running attempt is recorded as halted, and the record
// gained no turn.
func TestBrowserHaltButton(t *testing.T) {
	l := startLiveDebates(t, "--delay", "20s")
	before, err := walkie.Load(l.played)
	if err != nil {
		t.Fatal(err)
	}
	tb := newTab(t, 1000, 760)
	tb.open(l.url("/d/" + walkie.Key(l.played)))
	tb.waitFor("the agent at work", `document.getElementById("status").innerText.includes("writing turn")`, 10*time.Second)
	tb.do("halt", chromedp.SendKeys(`form[data-action="halt"] input[name="reason"]`, "stop: wrong question"),
		chromedp.Click(`form[data-action="halt"] button`))
	tb.waitFor("the page shows it halted", `document.getElementById("status").innerText.includes("halted")`, 10*time.Second)
	sessiontest.WaitFor(t, 10*time.Second, "the halted attempt logged", func() bool {
		recs := turnLog(t, l.played)
		return len(recs) > 0 && recs[len(recs)-1].Outcome == walkie.OutcomeHalted
	})
	// Issue 32 item 15: logged as a person's halt (not "walkie halt":
	// this one came from the page), and the page offers what a halted
	// debate takes.
	recs := turnLog(t, l.played)
	if d := recs[len(recs)-1].Detail; d != "halted by a person; the attempt was discarded" {
		t.Errorf("the halted attempt's detail: %q", d)
	}
	tb.waitFor("the turn log shows the halt", `document.getElementById("turns").innerText.includes("halted by a person")`, 5*time.Second)
	tb.waitFor("the controls of a halted debate", visibleForms+` === "resume extend note"`, 5*time.Second)
	st, err := walkie.LoadState(walkie.StateDir(l.played, "beta"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != walkie.StatusHalted || st.Reason != "stop: wrong question" {
		t.Errorf("state after the halt button: status %q, reason %q", st.Status, st.Reason)
	}
	after, err := walkie.Load(l.played)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Entries) != len(before.Entries) {
		t.Errorf("the record went from %d to %d entries while halting", len(before.Entries), len(after.Entries))
	}
	checkRecord(t, l.played)
	if msg := eval[string](tb, `document.getElementById("control-msg").innerText`); !strings.Contains(msg, "halt: done") {
		t.Errorf("the page says %q after the halt", msg)
	}
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}

// An entry that holds a script or an image with an onerror handler shows
// them as text and runs nothing, whether it was there when the page
// loaded or arrived by the stream.
func TestBrowserHostileEntryRunsNothing(t *testing.T) {
	dir := t.TempDir()
	file := newDebate(t, dir, "hostile", 3, "alice", "bob")
	hostile := "Look: <script>alert('script ran')</script> and <img src=x onerror=\"alert('onerror ran')\">\n\n" +
		"<div onmouseover=\"alert(3)\">block</div>\n\n[click](javascript:alert('link ran')) ![pixel](x.png)\n"
	if _, err := walkie.Append(file, walkie.Post{From: "alice", Body: []byte(hostile)}); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, ""), Listen: "127.0.0.1:0"})
	t.Cleanup(func() { d.stop(t) })
	tb := newTab(t, 1000, 760)
	tb.open("http://" + d.Addr() + "/d/" + walkie.Key(file))
	tb.waitFor("the stream is open", `!document.getElementById("live").hidden`, 5*time.Second)
	if _, err := walkie.Append(file, walkie.Post{From: "bob", Body: []byte(strings.ReplaceAll(hostile, "ran", "ran live"))}); err != nil {
		t.Fatal(err)
	}
	tb.waitFor("the live entry", `document.querySelectorAll("#entries .entry").length === 2`, 5*time.Second)
	for _, seq := range []string{"e-1", "e-2"} {
		text := eval[string](tb, `document.getElementById("`+seq+`").innerText`)
		for _, want := range []string{"<script>alert(", "<img src=x onerror=", `<div onmouseover="alert(3)">`} {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not show %q as text:\n%s", seq, want, text)
			}
		}
		if n := eval[int](tb, `document.getElementById("`+seq+`").querySelectorAll("script, img, [onerror], [onmouseover], a[href^='javascript']").length`); n != 0 {
			t.Errorf("%s holds %d live elements from the agent's HTML", seq, n)
		}
	}
	// Hover and click everything an agent wrote; nothing may run.
	tb.do("poke the entries", chromedp.Click(`#e-2 .body`))
	time.Sleep(300 * time.Millisecond) // a dialog or an error would arrive as an event meanwhile
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the hostile entries made the browser report:\n%s", strings.Join(p, "\n"))
	}
}

// With a token set, a page opened without it shows nothing but the prompt
// for it; given the token, the same page shows the debates (by the
// session cookie, so the event stream works too).
func TestBrowserTokenPrompt(t *testing.T) {
	dir := t.TempDir()
	file := newDebate(t, dir, "secretive", 3, "alice", "bob")
	postAs(t, file, "alice")
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, ""), Listen: "127.0.0.1:0", Token: "s3cret-page-token"})
	t.Cleanup(func() { d.stop(t) })
	tb := newTab(t, 1000, 760)
	for _, path := range []string{"/", "/d/" + walkie.Key(file)} {
		tb.open("http://" + d.Addr() + path)
		html := eval[string](tb, "document.documentElement.outerHTML")
		for _, secret := range []string{"secretive", file, "alice", "Over to you"} {
			if strings.Contains(html, secret) {
				t.Errorf("%s without the token shows %q:\n%s", path, secret, html)
			}
		}
		if !eval[bool](tb, `!!document.getElementById("token") && document.querySelectorAll("table, #entries").length === 0`) {
			t.Errorf("%s without the token is not just the prompt:\n%s", path, html)
		}
	}
	tb.do("give a wrong token", chromedp.SendKeys("#token", "nope"), chromedp.Click("#login button"))
	tb.waitFor("refused", `document.getElementById("login-error").innerText.includes("refused")`, 5*time.Second)
	tb.do("give the token", chromedp.SendKeys("#token", "s3cret-page-token"), chromedp.Click("#login button"))
	tb.waitFor("the debate's page", `!!document.getElementById("entries") && document.body.innerText.includes("Over to you")`, 10*time.Second)
	tb.waitFor("the stream is open", `!document.getElementById("live").hidden`, 5*time.Second)
	if strings.Contains(eval[string](tb, "document.URL"), "s3cret") {
		t.Error("the token is in the page's URL")
	}
	if p := tb.problems(); len(p) > 0 {
		// The two refused loads (401) are the only console messages allowed.
		for _, m := range p {
			if !strings.Contains(m, "401") {
				t.Errorf("the browser reported: %s", m)
			}
		}
	}
}

// Issue 22: a page of another origin (another port of this machine: the
// same site, another origin) can neither read the daemon's debates nor
// halt one, by fetch, by a form, or by a no-cors request.
func TestBrowserOtherOriginCannotReadOrHalt(t *testing.T) {
	dir := t.TempDir()
	file := newDebate(t, dir, "target", 3, "alice", "bob")
	postAs(t, file, "alice")
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, ""), Listen: "127.0.0.1:0"})
	t.Cleanup(func() { d.stop(t) })
	daemon := "http://" + d.Addr()
	body := strconv.Quote(`{"file":` + strconv.Quote(file) + `,"reason":"from another origin"}`)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><body>
<form id="f" method="POST" action="%[1]s/api/halt" enctype="text/plain" target="sink"><input name='{"file":%[3]s,"reason":"form","x":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
window.results = {};
const run = async () => {
  try { const r = await fetch("%[1]s/api/debates"); window.results.read = "read " + (await r.text()).length; }
  catch (e) { window.results.read = "refused: " + e; }
  try { const r = await fetch("%[1]s/api/halt", {method: "POST", headers: {"Content-Type": "application/json"}, body: %[2]s}); window.results.json = "status " + r.status; }
  catch (e) { window.results.json = "refused: " + e; }
  try { await fetch("%[1]s/api/halt", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: %[2]s}); window.results.nocors = "sent"; }
  catch (e) { window.results.nocors = "refused: " + e; }
  document.getElementById("f").submit();
  window.results.done = true;
};
run();
</script></body>`, daemon, body, strconv.Quote(file))
	}))
	t.Cleanup(evil.Close)
	tb := newTab(t, 800, 600)
	tb.open(evil.URL)
	tb.waitFor("the hostile page's attempts", "window.results && window.results.done === true", 10*time.Second)
	time.Sleep(500 * time.Millisecond) // the form's post lands meanwhile
	res := eval[map[string]any](tb, "window.results")
	if r, _ := res["read"].(string); !strings.HasPrefix(r, "refused") {
		t.Errorf("another origin read /api/debates: %v", res["read"])
	}
	if r, _ := res["json"].(string); !strings.HasPrefix(r, "refused") {
		t.Errorf("another origin's JSON halt got through the preflight: %v", res["json"])
	}
	if got := status(t, file); got != walkie.StatusOpen {
		t.Errorf("after the hostile page the debate is %s", got)
	}
	st, err := walkie.LoadState(walkie.StateDir(file, "target"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != "" || st.Reason != "" {
		t.Errorf("the hostile page changed the state: %+v", st)
	}
}
