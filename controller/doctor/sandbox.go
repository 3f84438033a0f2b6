package doctor

import (
	"fmt"
	"os"
	"strings"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
)

// AgentSandbox is an agent's boundary on this machine: the mechanism and
// what it lacks, and the level of its sessions in each role.
type AgentSandbox struct {
	Kind    string            `json:"kind,omitempty"` // "landlock", "seatbelt", "" for none
	ABI     int               `json:"abi,omitempty"`  // Landlock's
	Missing []string          `json:"missing,omitempty"`
	Levels  map[string]string `json:"levels"` // role → auto, required, off
}

// RoleReach says in one line what a role's sessions reach (reach.go in
// the engine and the round table lays it out).
type RoleReach struct {
	Role, Reaches string
}

// Reaches are the roles in the order docs list them.
var Reaches = []RoleReach{
	{config.RoleDebater, "reads its working directory, but not .walkie/ nor other debates' records; writes its record"},
	{config.RoleImplementer, "as a debater, and writes its workspace; reads the approved phases; never the grader's hidden tests"},
	{config.RoleReviewer, "reads and writes its own copy of the record and the workspace, nothing else"},
	{config.RoleGrader, "reads the record's folder, hidden tests included (not .walkie/); writes its copy; a private HOME and none of walkie's keys"},
	{config.RolePhase, "reads and writes its own copy, nothing else"},
	{config.RoleDistiller, "reads and writes its own folder (the chat, the briefing it writes), nothing else"},
	{config.RoleProbe, "reads and writes a folder of its own, nothing else"},
}

// EveryRole is what every sandboxed session reaches, whatever its role.
func EveryRole() string {
	home, _ := os.UserHomeDir()
	return fmt.Sprintf("reads and runs the system (/usr, /etc but its secrets, /proc, /sys), its CLI's install and its PATH outside your HOME; writes a private HOME and TMPDIR; never your HOME (%s) nor another session's; the network stays open; the paths of sandbox_read and sandbox_write added", home)
}

// sandboxOf is agent a's boundary here; a required level this system
// cannot meet is a problem, named with the line that asks for it.
func sandboxOf(cfg *config.Config, a config.Agent, sup session.SandboxReport) (AgentSandbox, []string) {
	s := AgentSandbox{Kind: sup.Kind, ABI: sup.ABI, Missing: sup.Missing, Levels: map[string]string{}}
	var where []string
	roles := map[string][]string{} // where a required level is set → its roles
	for _, r := range Reaches {
		lv := cfg.SandboxFor(a, r.Role)
		s.Levels[r.Role] = lv.Level
		if lv.Level == config.SandboxRequired && len(sup.Missing) > 0 {
			if _, ok := roles[lv.Where()]; !ok {
				where = append(where, lv.Where())
			}
			roles[lv.Where()] = append(roles[lv.Where()], r.Role)
		}
	}
	var problems []string
	for _, w := range where {
		problems = append(problems, fmt.Sprintf("%s: the sandbox is required (%s sessions), and this system cannot give it: %s; set it to auto to run without the whole boundary",
			w, strings.Join(roles[w], ", "), strings.Join(sup.Missing, "; ")))
	}
	return s, problems
}
