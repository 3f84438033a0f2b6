package session

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// These helpers make the test binary play a controller that the test then
// kills with SIGKILL (TestMain dispatches on the variables).
const (
	crashHelperEnv    = "WALKIE_SESSION_CRASH_HELPER"
	watchdogHelperEnv = "WALKIE_SESSION_WATCHDOG_HELPER"
)

// crashScript is the agent of the crashed controller: a leader with two
// children that ignore the terminal's hangup (as a daemonised helper
// would), the first in the leader's group, the second (after set -m, job
// control) in a group of its own inside the session.
const crashScript = "trap '' HUP; sleep 60 & set -m; sleep 60 & wait"

// crashHelper starts a session running crashScript, prints the leader's
// identity, and waits to be killed.
func crashHelper() {
	s, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", crashScript}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	id, err := Identify(s.Pid())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(id.Pid, id.StartTicks)
	s.Wait()
	os.Exit(0)
}

// watchdogHelper guards the process group named by its variable with a
// watchdog run by the shell named after the comma, says "ready", and
// waits to be killed.
func watchdogHelper(arg string) {
	var shell string
	var pgid int
	if _, err := fmt.Sscanf(arg, "%d,%s", &pgid, &shell); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if _, err := startWatchdog(shell, pgid); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("ready", strconv.Itoa(os.Getpid()))
	time.Sleep(time.Hour) // not select{}: the runtime would call that a deadlock and exit
}
