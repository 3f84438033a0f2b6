package session

import (
	"fmt"
	"os"
)

// Inside says whether this process runs inside a session walkie started,
// and how it knows: the session's variable in its environment, else (on
// Linux) an ancestor that carries it. An agent can unset a variable and
// call setsid, but not change its parents' environments; a process
// that left its ancestry too (a daemonised double fork) is not seen here,
// which is why the sandbox also keeps walkie's state out of its reach.
// Control commands that only a person may run refuse when it is true.
func Inside() (bool, string) {
	if id, ok := os.LookupEnv(SessionVar); ok {
		return true, fmt.Sprintf("%s=%s is set", SessionVar, id)
	}
	if pid, id, ok := sessionAncestor(); ok {
		return true, fmt.Sprintf("its ancestor, process %d, runs in session %s", pid, id)
	}
	return false, ""
}
