package engine

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/session/activity"
)

// Job is one agent session to run.
type Job struct {
	// Agent is what runs and how: command, timeouts, rules, isolation,
	// usage parser.
	Agent config.Agent
	// Argv, when set, is the command as it is, without placeholders (the
	// grader's, from the front matter); the agent's command is ignored.
	Argv []string
	// Vars fill the placeholders of the agent's command, dir and env;
	// Vars.Prompt is the rendered prompt.
	Vars config.Vars
	// Dir, when set, is the working directory whatever the agent's dir:
	// says (a reviewer's sandbox).
	Dir string
	// Env is set for this job over the agent's own variables
	// (WALKIE_ROLE=reviewer, …).
	Env []string
	// Transcript is the transcripts' path without extension: the raw
	// output goes to Transcript+".log", the plain text to +".txt". Empty:
	// none is written.
	Transcript string
	// Result is the file the agent is to write (the record, a verdict, a
	// briefing). A change to it is progress; once it has been quiet for
	// the agent's grace and Ready holds, the session is ended with Done as
	// the reason. Empty: the session ends only by itself.
	Result string
	Ready  func() bool
	Done   string
	// Control is a file whose change may mean a halt (the log); Halted
	// is asked then. Empty: nothing halts the job but its context.
	Control string
	Halted  func() bool
	// ID names the session (session.NewID). A caller that records it
	// before Run can end what the session left even if it dies before
	// Started is called (session.Sweep). Empty: the session makes one.
	ID string
	// Started is called as soon as the process runs, before the engine
	// watches it: the moment to record its pid for crash recovery.
	Started func(*session.Session)
	// Output sees what the agent is doing (session/activity) when it
	// changes, never before Started has returned: what the agent did
	// before then is told as soon as it has.
	Output func(line string)
	// Role is what the session is for (config.RoleDebater, the default,
	// …): its sandbox level follows from it and the agent (SandboxFor).
	Role string
	// Reach is what the role may reach in its sandbox besides what every
	// session gets (reach.go): a debater's and an implementer's working
	// directory and record are added to it.
	Reach session.Reach
}

// Spec turns the job into a session.Spec: the agent's configuration with
// its placeholders expanded. Everything about the environment, HOME and
// TMPDIR is passed to the session as the agent's settings say; the session
// applies it.
func (e *Engine) Spec(j Job) (session.Spec, error) {
	a := j.Agent
	argv := j.Argv
	if argv == nil {
		var err error
		if argv, err = a.Argv(j.Vars); err != nil {
			return session.Spec{}, BadInput(err)
		}
	}
	dir := j.Dir
	if dir == "" {
		var err error
		if dir, err = a.WorkDir(j.Vars); err != nil {
			return session.Spec{}, BadInput(err)
		}
	}
	env, err := a.EnvVars(j.Vars)
	if err != nil {
		return session.Spec{}, BadInput(err)
	}
	rules, err := sessionRules(a.Rules)
	if err != nil {
		return session.Spec{}, BadInput(fmt.Errorf("agent %s: %w", a.Name, err))
	}
	allow := a.EnvAllow
	if a.Home == config.HomeInherit {
		allow = append(slices.Clone(allow), "HOME")
	}
	spec := session.Spec{
		Argv:        argv,
		Dir:         dir,
		Env:         append(env, j.Env...),
		EnvAllow:    allow,
		PrivateHome: a.Home != config.HomeInherit,
		HomeFiles:   a.HomeFiles,
		PrivateTmp:  a.TmpDir == config.TmpDirPrivate,
		Timeout:     a.Timeout,
		Stall:       a.Stall,
		Grace:       a.KillGrace,
		Rules:       rules,
		ID:          j.ID,
		// What an agent prints may be unbounded; the transcripts are not.
		TranscriptCap: a.TranscriptCap,
	}
	if j.Transcript != "" {
		spec.RawPath, spec.TextPath = j.Transcript+".log", j.Transcript+".txt"
	}
	if j.Argv == nil {
		// Without walkie's instructions the CLI runs with its own: a
		// dearer turn, not a failed one.
		if s, err := withInstructions(spec, a, &j.Reach); err != nil {
			e.log.Warn("the CLI keeps its own instructions", zap.String("agent", a.Name), zap.Error(err))
		} else {
			spec = s
		}
	}
	if spec.Sandbox, err = e.sandbox(j, dir); err != nil {
		return session.Spec{}, BadInput(err)
	}
	if spec.Sandbox.Level.On() && session.SandboxSupport().Kind != "" {
		spec.Argv = a.UnderSandbox(spec.Argv)
	}
	if j.Role == config.RoleGrader && spec.Sandbox.Level.On() {
		// The user's own test command keeps their environment, but not
		// their HOME, which no sandboxed session reaches, nor the keys
		// and tokens walkie holds: the grader runs code the implementer
		// wrote.
		spec.PrivateHome, spec.EnvDeny = true, config.SecretVars(e.cfg)
	}
	if j.Output != nil {
		// What the agent is doing, read from its CLI's own events (or its
		// last meaningful line of plain output), never a raw line of JSON.
		tr := activity.New(a.Usage)
		spec.Observer = func(chunk []byte) {
			if act, changed := tr.Feed(chunk); changed {
				j.Output(act.String())
			}
		}
	}
	return spec, nil
}

// sandbox is j's boundary: the level its agent and role get, and what the
// role may reach with the agent's own extra paths.
func (e *Engine) sandbox(j Job, dir string) (session.Sandbox, error) {
	role := cmp.Or(j.Role, config.RoleDebater)
	if role == config.RoleGrader {
		// The grader is no configured agent: its paths are the defaults'.
		j.Agent.Boundary = e.cfg.Defaults.Boundary
	}
	level := e.cfg.SandboxFor(j.Agent, role).Level
	if level == config.SandboxOff {
		return session.Sandbox{Level: session.SandboxOff}, nil
	}
	read, write, err := j.Agent.SandboxPaths(j.Vars)
	if err != nil {
		return session.Sandbox{}, err
	}
	env, err := j.Agent.EnvVars(j.Vars)
	if err != nil {
		return session.Sandbox{}, err
	}
	r := reach(j, role, dir)
	r.Read = append(r.Read, read...)
	r.Write = append(append(append(r.Write, write...), homeGrants(j.Agent)...), ownHomes(env)...)
	return session.Sandbox{Level: session.SandboxLevel(level), Reach: r}, nil
}

func sessionRules(rules []config.Rule) ([]session.Rule, error) {
	var out []session.Rule
	for _, r := range rules {
		re, err := regexp.Compile(r.Match)
		if err != nil {
			return nil, fmt.Errorf("prompt rule %q: %w", r.Match, err)
		}
		out = append(out, session.Rule{Pattern: re, Reply: r.Reply, Outcome: string(r.Outcome), Detail: r.Detail})
	}
	return out, nil
}

// TranscriptBase is where an attempt's transcripts go in a debate's state
// directory, without extension: turns/NNNN-AGENT-ATTEMPT. Every kind of
// attempt (turn, review, recovery's look for what an interrupted one left)
// names them this way.
func TranscriptBase(stateDir string, turn int, agent string, attempt int) string {
	return filepath.Join(stateDir, "turns", fmt.Sprintf("%04d-%s-%d", turn, agent, attempt))
}

// Rel is path relative to dir when it can be, for the records kept in
// dir; "" stays "".
func Rel(dir, path string) string {
	if path == "" {
		return ""
	}
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}
