package walkie

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestLiveRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".walkie", "d")
	if l, err := LoadLive(dir); l != nil || err != nil {
		t.Fatalf("no view yet: %v, %v", l, err)
	}
	want := &Live{ControllerPID: os.Getpid(), UpdatedAt: time.Date(2026, 11, 30, 3, 59, 0, 0, time.UTC),
		Sessions: []LiveSession{{Turn: 3, Round: 2, Agent: "codex", Attempt: 1, Started: time.Date(2026, 11, 30, 3, 58, 0, 0, time.UTC), Activity: "reading api.go"}}}
	if err := WriteLive(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadLive(dir)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if !got.Current() {
		t.Error("this process's view is not current")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".live.json.tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	for range 2 {
		if err := RemoveLive(dir); err != nil {
			t.Fatal(err)
		}
	}
	if l, _ := LoadLive(dir); l != nil {
		t.Errorf("removed, yet %+v", l)
	}
}

func TestLiveOfADeadController(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if (&Live{ControllerPID: cmd.Process.Pid}).Current() || (&Live{}).Current() || (*Live)(nil).Current() {
		t.Error("a view whose writer is gone reads as current")
	}
}

func TestLoadLiveDamaged(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LiveFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLive(dir); err == nil {
		t.Error("a damaged view read without error")
	}
}
