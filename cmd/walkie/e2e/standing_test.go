package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// Every surface says the same of a debate: where it stands is one
// picture (controller.Standing), and these are the ways they drifted
// apart before it was.

// A controller killed mid-turn leaves its attempt in the state: status,
// its JSON and show say it was interrupted and what goes on, never that
// it is running; the next auto recovers it.
func TestOnePictureOfAKilledController(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, scripts: map[string]string{"a": "behavior: hang"}})
	auto := d.Start("auto", d.name, "--approve")
	d.waitRunning(auto, 1)
	auto.Signal(syscall.SIGKILL)
	auto.Wait(20 * time.Second)

	status := d.MustRun(0, "status", d.name).Stdout
	if strings.Contains(status, "running") || !strings.Contains(status, "waiting  turn 1 by a was interrupted: its controller (pid ") ||
		!strings.Contains(status, "walkie auto "+d.name+" finishes it") {
		t.Errorf("status after the controller was killed:\n%s", status)
	}
	var js struct {
		Running *struct {
			Turn        int  `json:"turn"`
			Interrupted bool `json:"interrupted"`
		} `json:"running"`
		Controller *struct{} `json:"controller"`
		Waiting    string    `json:"waiting"`
	}
	if err := json.Unmarshal([]byte(d.MustRun(0, "status", d.name, "--json").Stdout), &js); err != nil {
		t.Fatal(err)
	}
	if js.Running == nil || !js.Running.Interrupted || js.Running.Turn != 1 || js.Controller != nil || !strings.Contains(js.Waiting, "interrupted") {
		t.Errorf("status --json: %+v", js)
	}
	if show := d.MustRun(0, "show", d.name).Stdout; !strings.Contains(show, "turn 1 by a was interrupted") {
		t.Errorf("show's header does not say the turn was interrupted:\n%s", show)
	}

	// The next run finishes it as interrupted; the hanging agent it left
	// goes with it.
	d.write("a.yaml", "body: Yes.\nsign: true\n")
	d.write("b.yaml", "body: Yes.\nsign: true\n")
	d.auto(0)
	d.wantOutcomes(d.turns(), "interrupted", "accepted", "accepted")
	if status := d.MustRun(0, "status", d.name).Stdout; strings.Contains(status, "interrupted") || strings.Contains(status, "waiting") {
		t.Errorf("status once the debate converged:\n%s", status)
	}
}

// An extension ends with the debate, but the cap it held does not: a
// debate capped at 1 and extended by 2 that converges in round 2 reads
// "round 2 of 3" in status, its JSON, show, report and on the page
// (before: "of 2" in status and report, and the page its own figure).
func TestOnePictureOfAnExtendedDebate(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1,
		scripts: map[string]string{"a": "sign_from: 2", "b": "sign_from: 2"}})
	d.Env = append(d.Env, "XDG_STATE_HOME="+t.TempDir()) // the registry the page reads
	d.MustRun(0, "extend", d.name, "--rounds", "2")
	d.auto(0)

	if status := d.MustRun(0, "status", d.name).Stdout; !strings.Contains(status, "turns    4 recorded, ended in round 2 of 3\n") {
		t.Errorf("status:\n%s", status)
	}
	var js struct {
		Status   string `json:"status"`
		Round    int    `json:"round"`
		RoundCap int    `json:"round_cap"`
	}
	if err := json.Unmarshal([]byte(d.MustRun(0, "status", d.name, "--json").Stdout), &js); err != nil {
		t.Fatal(err)
	}
	if js.Status != "converged" || js.Round != 2 || js.RoundCap != 3 {
		t.Errorf("status --json: %+v", js)
	}
	if show := d.MustRun(0, "show", d.name).Stdout; !strings.Contains(show, "4 turns, ended in round 2 of 3") {
		t.Errorf("show:\n%s", show)
	}
	if report := d.MustRun(0, "report", d.name).Stdout; !strings.Contains(report, "rounds: 2 of at most 3") {
		t.Errorf("report:\n%s", report)
	}

	// The page of a daemon serving another directory lists the debate
	// from the registry, from the same standing.
	serve := d.Start("serve", "--dir", t.TempDir(), "--listen", "127.0.0.1:0")
	defer serve.End()
	var addr string
	re := regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	sessiontest.WaitFor(t, 20*time.Second, "serve listening", func() bool {
		addr = re.FindString(serve.Stderr())
		return addr != ""
	})
	var page []struct {
		File      string `json:"file"`
		Status    string `json:"status"`
		Round     int    `json:"round"`
		MaxRounds int    `json:"max_rounds"`
	}
	sessiontest.WaitFor(t, 20*time.Second, "the debate on the page", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://%s/api/debates", addr))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var got struct {
			Debates []struct {
				File      string `json:"file"`
				Status    string `json:"status"`
				Round     int    `json:"round"`
				MaxRounds int    `json:"max_rounds"`
			} `json:"debates"`
		}
		if json.NewDecoder(resp.Body).Decode(&got) != nil || len(got.Debates) == 0 {
			return false
		}
		page = page[:0]
		for _, x := range got.Debates {
			page = append(page, x)
		}
		return true
	})
	if len(page) != 1 || page[0].Status != "converged" || page[0].Round != 2 || page[0].MaxRounds != 3 {
		t.Errorf("the page: %+v", page)
	}
}
