package notify

import (
	"path/filepath"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// The supervisor's copy follows the debate's own switch, else the
// config's default, whether asked with the record or its state directory.
func TestCopyWanted(t *testing.T) {
	on, off := true, false
	for _, tt := range []struct {
		name   string
		set    *bool
		dflt   bool
		wanted bool
	}{
		{"no switch: the config's on", nil, true, true},
		{"no switch: the config's off", nil, false, false},
		{"switched off", &off, true, false},
		{"switched on", &on, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "d.walkie.md")
			if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: 2}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := walkie.UpdateState(file, walkie.OpState, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
				s.CopySupervisor = tt.set
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got := CopyWanted(file, tt.dflt); got != tt.wanted {
				t.Errorf("CopyWanted = %v, want %v", got, tt.wanted)
			}
			if got := CopyWantedIn(walkie.StateDir(file, "d"), tt.dflt); got != tt.wanted {
				t.Errorf("CopyWantedIn = %v, want %v", got, tt.wanted)
			}
		})
	}
}
