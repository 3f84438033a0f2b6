package walkie

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// ActivityFile is the name, in a debate's state directory, of what the
// running controller's sessions are doing. A page in another process (the
// fleet page of walkie serve, for a debate walkie auto runs) reads it; the
// controller rewrites it at most once a second while output flows, and
// removes it when its run ends. It is never part of the record.
const ActivityFile = "activity.json"

// Activity is the content of activity.json.
type Activity struct {
	// PID is the controller's process: a file left by a controller that
	// died is stale, and a reader also checks ControllerRunning.
	PID       int               `json:"pid"`
	Sessions  []SessionActivity `json:"sessions"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// SessionActivity is one running agent session: a debate turn, an
// implementer's, or one of a round table's reviewers running in parallel.
type SessionActivity struct {
	Agent   string    `json:"agent"`
	Turn    int       `json:"turn"`
	Round   int       `json:"round,omitempty"`
	Attempt int       `json:"attempt"`
	Started time.Time `json:"started"`
	// Line is what the session is doing: the controller's output event
	// as it came (the agent's latest output line, or a summary of it).
	Line string `json:"line,omitempty"`
}

// MaxActivityLine bounds a session's line in activity.json, so that an
// agent printing one endless line cannot grow the file.
const MaxActivityLine = 300

// WriteActivity replaces dir/activity.json, unsynced (RewriteUnsynced):
// it says what is happening now, and a crash makes it stale anyway.
func WriteActivity(dir string, a *Activity) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := RewriteUnsynced(filepath.Join(dir, ActivityFile), b, 0o600); err != nil {
		return fmt.Errorf("write activity: %w", err)
	}
	return nil
}

// RemoveActivity removes dir/activity.json; a missing file is no error.
// Where the file is rewritten in place it becomes the spare instead, so
// that the next session's first line makes no new file.
func RemoveActivity(dir string) error {
	err := retire(filepath.Join(dir, ActivityFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ReadActivity reads dir/activity.json: nil when there is none, or when
// no controller holds the debate any more (the file is stale).
func ReadActivity(dir string) (*Activity, error) {
	b, err := ReadSideFile(dir, ActivityFile, MaxSideFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var a Activity
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, &InputError{File: filepath.Join(dir, ActivityFile), Msg: "activity record is not valid JSON: " + err.Error(),
			Fix: "remove the file; the running controller writes it again"}
	}
	if !ControllerRunning(dir) {
		return nil, nil
	}
	return &a, nil
}
