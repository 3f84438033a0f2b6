// Command fakeagent behaves like an AI coding-agent CLI, for tests and for
// the demo. It reads the walkie file it is pointed at and, as its flags or
// script say, appends a turn or misbehaves in one of the ways real CLIs do.
// It deliberately does not import the project's walkie package: it stands
// for an external program, so it only knows the file format from outside.
//
// Usage:
//
//	fakeagent --file F --agent NAME [--turn N] [--round R] [--script S.yaml] [--state FILE] [flags]
//
// Without --turn the turn number is one more than the number of lines
// matching "^## Turn N · " in the file. Without --round the round is
// (turn-1)/len(participants)+1, with participants from the file's front
// matter ("participants: [a, b]"; 1 if absent).
//
// A turn is appended at the end of the file in one write, opened O_APPEND:
//
//	<blank line>
//	## Turn N · NAME
//	body…
//	Signed-off-by: NAME        (only when signing)
//
// # What it does, in order
//
//  1. chatter: N lines of coloured output with a spinner redrawn by "\r"
//  2. flood_mb: that many MB of text output
//  3. read_stdin: read the terminal until EOF (^D), report the byte count
//  4. ask: print the question, read a line; anything but y/yes exits 0
//     without touching the file
//  5. delay: sleep
//  6. shell: run a /bin/sh -c snippet in the working directory (shells:
//     one per round, the last repeats), with {agent} {turn} {round}
//     replaced; a failing snippet ends the agent with exit code 2; then
//     body_cmd (body_cmds per round), whose output becomes the body, as
//     a turn that cites the commit the shell just made would
//     (`Refs: main@$(git rev-parse --short HEAD)`); then the tries of a
//     hostile agent: try_read and try_write paths, each reported as
//     refused or ALLOWED on a line of its own (hostile.go)
//  7. behavior (below)
//  8. usage: print a claude "--output-format json" result line
//  9. hang_after: hang forever (some CLIs do after answering)
//  10. exit with exit_code (default 0)
//
// Behaviours:
//
//	append         append a proper turn (the default)
//	none           write nothing
//	hang           hang forever without writing
//	two-turns      append turns N and N+1 in one write
//	edit-briefing  change a word in the "# Briefing" section, then append
//	edit-turn      change a word in the first turn's body, then append
//	wrong-heading  append with "## Turn N - NAME"
//	wrong-author   append as `author` (default "intruder")
//	not-logged-in  print "Not logged in · Please run /login", exit 1
//	grandchild     append, start a grandchild that ignores SIGTERM and
//	               SIGHUP and keeps the terminal open, then exit; with
//	               grandchild_setsid it also leaves the process group
//	write          write the body as the whole of the file (created if
//	               missing): an agent told to write a file, such as a
//	               distilled briefing, rather than to append a turn
//	verdict        a round-table reviewer: write the verdict text
//	               (verdicts: one per round, the last repeats; {agent}
//	               {turn} {round} replaced) to verdict_file, by default
//	               $WALKIE_VERDICT, which walkie sets for reviewers; the
//	               walkie file is only read
//
// # Script
//
// A YAML script (--script) holds the same settings as the flags; a setting
// in the script wins over the flag. Top-level settings apply to every step;
// "steps" lists per-invocation overrides: with --state FILE the k-th
// invocation (counted in FILE) runs step k, and the last step repeats.
// Without --state the first step runs. Unknown keys are an error.
//
//	behavior: append          # see above
//	body: "text"              # turn body; {agent} {turn} {round} are replaced
//	bodies: ["r1", "r2"]      # body per round; the last repeats
//	sign: false               # end the turn with Signed-off-by
//	sign_from: 0              # sign from this round on (0 = never)
//	chatter: 0                # lines of coloured chatter first
//	flood_mb: 0               # MB of output first (fractions allowed)
//	read_stdin: false
//	ask: ""                   # yes/no question to ask first
//	delay: 0s                 # Go duration before acting
//	hang_after: false
//	exit_code: 0
//	author: intruder          # for wrong-author
//	usage: false              # print the JSON usage line at the end
//	cost_usd: 0.0123
//	input_tokens: 1234
//	output_tokens: 567
//	grandchild_setsid: false
//	pid_file: ""              # the grandchild's pid is written here
//	shell: ""                 # /bin/sh -c snippet run before the behavior
//	shells: ["r1", "r2"]      # snippet per round; the last repeats
//	verdict: '{"verdict": "approve", "objections": []}'
//	verdicts: ["r1", "r2"]    # verdict per round; the last repeats
//	verdict_file: ""          # default: $WALKIE_VERDICT
//	body_cmd: ""              # /bin/sh -c snippet whose output is the body
//	body_cmds: ["r1", "r2"]   # body_cmd per round; the last repeats
//	when:                     # the first entry whose conditions all hold
//	  - file: parse.py        #   overrides the step: a file (under
//	    contains: "return []" #   $WALKIE_WORKSPACE, else the working dir)
//	    lacks: "raise"        #   contains / lacks a text,
//	    last_blocker: brook   #   the last "**request changes**" turn is brook's,
//	    id: "-3$"             #   the walkie file's id matches a regexp;
//	    verdict: '{"verdict": "approve"}'  # then these settings apply
//	steps:
//	  - behavior: hang        # first invocation
//	  - {}                    # second and later: the top-level settings
package main
