package daemon

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/walkie-sh/walkie/walkie"
)

// Issue 32 items 14-16: what the fleet page lists, which controls it
// offers, and how a debate's page lays out on a laptop and on a phone.

// visibleForms are the control forms the page shows, by action.
const visibleForms = `[...document.querySelectorAll("#controls form")].filter(f => f.offsetParent !== null).map(f => f.dataset.action).join(" ")`

// Item 14: the page lists the daemon's own debates; those the registry
// names elsewhere on the machine come behind a switch, live there too,
// and a filter narrows either list, kept in the address.
func TestBrowserFleetScope(t *testing.T) {
	l := startLiveDebates(t)
	tb := newTab(t, 1280, 900)
	row := func(file string) string { return "document.getElementById('row-" + walkie.Key(file) + "')" }
	// Wait until the daemon's list has the auto run, at work.
	deadline := time.Now().Add(20 * time.Second)
	for !registeredRunning(l) {
		if time.Now().After(deadline) {
			t.Fatal("the auto run never showed up in the daemon's list")
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.open(l.url("/"))
	tb.waitFor("the stream is open", `!document.getElementById("live").hidden`, 5*time.Second)
	tb.waitFor("the two debates of the directory", row(l.waiting)+" && "+row(l.played), 5*time.Second)
	// The auto run's agent prints all along: its row changes, and the
	// stream must still not send it.
	time.Sleep(1500 * time.Millisecond)
	if eval[bool](tb, "!!"+row(l.auto)) {
		t.Fatal("the page at / lists a debate outside the daemon's directory")
	}
	scope := eval[string](tb, `document.querySelector(".scope").innerText`)
	if !strings.Contains(scope, "also the 1 elsewhere on this machine") {
		t.Errorf("the scope line says %q", scope)
	}
	tb.do("show every debate", chromedp.Click(`a.scope-link`))
	tb.waitFor("the auto run listed", row(l.auto), 10*time.Second)
	if u := eval[string](tb, "location.search"); u != "?all=1" {
		t.Errorf("the switch's address is %q", u)
	}
	tb.waitFor("the stream is open", `!document.getElementById("live").hidden`, 5*time.Second)
	tb.waitFor("the auto run's agent at work, live", row(l.auto)+".innerText.includes('writing turn')", 15*time.Second)

	// The filter: every word must be in the row's name, file, status or
	// runner.
	tb.do("filter", chromedp.SendKeys("#filter", "gamma auto"))
	tb.waitFor("only gamma shown", row(l.auto)+".offsetParent !== null && "+row(l.waiting)+".offsetParent === null && "+row(l.played)+".offsetParent === null", 5*time.Second)
	if got := eval[string](tb, `document.getElementById("filter-count").innerText`); got != "1 of 3" {
		t.Errorf("the filter's count says %q", got)
	}
	if q := eval[string](tb, `new URL(location.href).searchParams.get("q")`); q != "gamma auto" {
		t.Errorf("the address keeps the filter as %q", q)
	}
	tb.do("reload", chromedp.Reload(), chromedp.WaitReady("body"))
	tb.waitFor("the filter kept across a reload", `document.getElementById("filter").value === "gamma auto" && `+row(l.waiting)+".offsetParent === null", 5*time.Second)
	tb.do("back to the directory", chromedp.Click(`a.scope-link`))
	tb.waitFor("the directory's list, filtered", `location.search.includes("q=gamma") && !location.search.includes("all=1") && document.getElementById("filter-count").innerText === "0 of 2"`, 10*time.Second)
	if p := tb.problems(); len(p) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
	}
}

// registeredRunning reports whether the daemon lists a debate from the
// registry whose agent is at work.
func registeredRunning(l *liveDebates) bool {
	for _, d := range l.d.Debates() {
		if d.Elsewhere && d.Running != nil {
			return true
		}
	}
	return false
}

// Item 15: each debate's page offers what its standing allows, follows
// it live, and a refusal reads once.
func TestBrowserControlsFollowStanding(t *testing.T) {
	dir := t.TempDir()
	open := newDebate(t, dir, "open", 3, "alice", "bob")
	done := newDebate(t, dir, "done", 3, "alice", "bob")
	capped := newDebate(t, dir, "capped", 1, "alice", "bob")
	for _, p := range []walkie.Post{{From: "alice", Sign: true}, {From: "bob", Sign: true}} {
		p.Body = []byte("Agreed.\n")
		if _, err := walkie.Append(done, p); err != nil {
			t.Fatal(err)
		}
	}
	postAs(t, capped, "alice")
	postAs(t, capped, "bob")
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, ""), Listen: "127.0.0.1:0"})
	t.Cleanup(func() { d.stop(t) })
	page := func(file string) string { return "http://" + d.Addr() + "/d/" + walkie.Key(file) }
	tb := newTab(t, 1280, 900)
	forms := func(what, want string) {
		t.Helper()
		tb.waitFor(what+": "+want, visibleForms+` === "`+want+`"`, 10*time.Second)
	}

	tb.open(page(done))
	forms("converged", "note")
	// A halt sent anyway (the form is there, hidden): refused once, in
	// the daemon's words.
	eval[bool](tb, `(() => { const f = document.querySelector('form[data-action="halt"]'); f.elements.reason.value = "late"; f.requestSubmit(); return true })()`)
	tb.waitFor("the refusal", `document.getElementById("control-msg").innerText.includes("refused")`, 5*time.Second)
	if msg := eval[string](tb, `document.getElementById("control-msg").innerText`); msg != "halt refused: the debate has already converged" {
		t.Errorf("the page says %q", msg)
	}

	tb.open(page(capped))
	forms("at its cap", "extend note")
	tb.do("extend", chromedp.Click(`form[data-action="extend"] button`))
	forms("extended, open again", "halt extend note")

	tb.open(page(open))
	tb.waitFor("the stream is open", `!document.getElementById("live").hidden`, 5*time.Second)
	forms("open", "halt extend note")
	eval[bool](tb, "window.notReloaded = true")
	tb.do("halt", chromedp.SendKeys(`form[data-action="halt"] input[name="reason"]`, "lunch"), chromedp.Click(`form[data-action="halt"] button`))
	forms("halted", "resume extend note")
	tb.do("resume", chromedp.Click(`form[data-action="resume"] button`))
	forms("resumed", "halt extend note")
	if !eval[bool](tb, "window.notReloaded === true") {
		t.Error("the page reloaded")
	}
	// Halted behind the page's back: the page follows.
	if err := walkie.Halt(open, "from the command line"); err != nil {
		t.Fatal(err)
	}
	forms("halted by walkie halt", "resume extend note")
	for _, m := range tb.problems() {
		if !strings.Contains(m, "409") { // the refused halt's, which the browser logs
			t.Errorf("the browser reported: %s", m)
		}
	}
}

// Item 16: at 1280×900 an approved briefing is folded, so the turns are
// in view; one not yet approved is open. On a phone the latest entry
// comes first, one arriving live too.
func TestBrowserDebateLayout(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("The briefing states the question, the options, the constraints and what a sign-off means. ", 40)
	file := filepath.Join(dir, "long.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{ID: "long", Participants: []string{"alice", "bob"}, MaxRounds: 6, Briefing: []byte(long + "\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	for i, who := range []string{"alice", "bob", "alice"} {
		if _, err := walkie.Append(file, walkie.Post{From: who, Body: []byte(fmt.Sprintf("Turn %d's point, at some length. %s\n", i+1, strings.Repeat("More words. ", 30)))}); err != nil {
			t.Fatal(err)
		}
	}
	draft := filepath.Join(dir, "draft.walkie.md")
	if err := walkie.Init(draft, walkie.InitOptions{ID: "draft", Participants: []string{"alice", "bob"}, MaxRounds: 3, Briefing: []byte(long + "\n")}); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, ""), Listen: "127.0.0.1:0"})
	t.Cleanup(func() { d.stop(t) })
	page := func(f string) string { return "http://" + d.Addr() + "/d/" + walkie.Key(f) }
	top := func(sel string) string { return `document.querySelector("` + sel + `").getBoundingClientRect().top` }

	laptop := newTab(t, 1280, 900)
	laptop.open(page(file))
	if eval[bool](laptop, `document.querySelector("details.briefing").open`) {
		t.Error("an approved briefing is open")
	}
	if y, h := eval[float64](laptop, top("#entries .entry")), eval[float64](laptop, "window.innerHeight"); y >= h-80 {
		t.Errorf("the first turn starts at %.0fpx of a %.0fpx window: below the fold", y, h)
	}
	if eval[bool](laptop, `document.querySelector(".newest-first").offsetParent !== null`) {
		t.Error("the laptop page says the latest entry comes first")
	}
	if y, y3 := eval[float64](laptop, top("#e-1")), eval[float64](laptop, top("#e-3")); y >= y3 {
		t.Errorf("on a laptop turn 1 (%.0f) is not above turn 3 (%.0f)", y, y3)
	}
	laptop.open(page(draft))
	if !eval[bool](laptop, `document.querySelector("details.briefing").open`) {
		t.Error("a briefing not yet approved is folded")
	}

	phone := newTab(t, 390, 844)
	phone.open(page(file))
	phone.waitFor("the stream is open", `!document.getElementById("live").hidden`, 5*time.Second)
	if y1, y3 := eval[float64](phone, top("#e-1")), eval[float64](phone, top("#e-3")); y3 >= y1 {
		t.Errorf("on a phone turn 3 (%.0f) is not above turn 1 (%.0f)", y3, y1)
	}
	if !eval[bool](phone, `document.querySelector(".newest-first").offsetParent !== null`) {
		t.Error("the phone page does not say the latest entry comes first")
	}
	if _, err := walkie.Append(file, walkie.Post{From: "bob", Body: []byte("A live turn.\n")}); err != nil {
		t.Fatal(err)
	}
	phone.waitFor("the live turn", `!!document.getElementById("e-4")`, 5*time.Second)
	if y4, y3 := eval[float64](phone, top("#e-4")), eval[float64](phone, top("#e-3")); y4 >= y3 {
		t.Errorf("on a phone the live turn 4 (%.0f) is not above turn 3 (%.0f)", y4, y3)
	}
	for _, tb := range []*tab{laptop, phone} {
		if p := tb.problems(); len(p) > 0 {
			t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
		}
	}
}
