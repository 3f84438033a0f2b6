//go:build linux

package realcli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
)

// reader is the fake model's side of an agent that reads the record as
// its prompt says and then appends its turn: what every turn of a long
// debate does. With the pieces of walkie's prompt it asks for all of them
// at once, in the CLI's own tools (sed through the shell for claude and
// codex, read_file by line range for gemini, whose preset has no shell);
// with a prompt that names no pieces (today's, the baseline) it reads
// the file whole in one call, as "read the whole file first" asks. Its
// turn is appended with a quoted heredoc (gemini: replace on the last
// line), and then it says it is done: three model calls a turn.
type reader struct {
	file  string
	write func(turn int, agent string) string // the turn's body

	mu    sync.Mutex
	reads map[int]int // per turn: the reads the model asked for
}

// script is the reader as newFixture wants it.
func (rd *reader) script(file string) modelserver.Script {
	rd.file = file
	return modelserver.Script{Func: rd.reply, Measure: true}
}

var (
	promptHeadingRe = regexp.MustCompile(`(?m)^## Turn (\d+) · (\S+)$`)
	pieceRe         = regexp.MustCompile(`(?m)^\d+\. lines (\d+)-(\d+|end): `)
)

// promptTurn is the turn and author a session's prompt asks for; 0 when
// the request carries no such prompt.
func promptTurn(r *modelserver.Request) (int, string, string) {
	p := r.TextWith("Your heading:")
	if p == "" {
		p = r.TextWith("with this heading line exactly as written") // the baseline's
	}
	m := promptHeadingRe.FindStringSubmatch(p)
	if m == nil {
		return 0, "", ""
	}
	n, _ := strconv.Atoi(m[1])
	return n, m[2], p
}

func (rd *reader) reply(r *modelserver.Request) (modelserver.Reply, bool) {
	if isRouting(r) {
		return modelserver.Text(routing), true
	}
	turn, agent, prompt := promptTurn(r)
	if turn == 0 {
		return modelserver.Text("The prompt names no turn."), true
	}
	rd.mu.Lock()
	if rd.reads == nil {
		rd.reads = map[int]int{}
	}
	reads, asked := rd.reads[turn]
	rd.mu.Unlock()
	switch done := toolResults(r); {
	case done == 0:
		reply, n := rd.read(r.Vendor, prompt)
		rd.mu.Lock()
		rd.reads[turn] = n
		rd.mu.Unlock()
		return reply, true
	case asked && done == reads:
		return rd.append(r.Vendor, turn, agent), true
	}
	return modelserver.Text("I appended my turn."), true
}

// read asks for the pieces the prompt names, all in one answer, or for
// the whole file when it names none; n is how many reads it asked for.
func (rd *reader) read(v modelserver.Vendor, prompt string) (modelserver.Reply, int) {
	type span struct{ from, to int } // to 0: the end
	var spans []span
	for _, m := range pieceRe.FindAllStringSubmatch(prompt, -1) {
		from, _ := strconv.Atoi(m[1])
		to, _ := strconv.Atoi(m[2]) // "end" reads as 0
		spans = append(spans, span{from, to})
	}
	var reply modelserver.Reply
	if len(spans) == 0 {
		if v == modelserver.Gemini {
			reply.Tools = append(reply.Tools, modelserver.ToolCall{Name: "read_file", Args: map[string]any{"file_path": rd.file}})
		} else {
			reply.Commands = append(reply.Commands, "cat '"+rd.file+"'")
		}
		return reply, 1
	}
	for _, s := range spans {
		if v == modelserver.Gemini {
			args := map[string]any{"file_path": rd.file, "start_line": s.from}
			if s.to > 0 {
				args["end_line"] = s.to
			}
			reply.Tools = append(reply.Tools, modelserver.ToolCall{Name: "read_file", Args: args})
			continue
		}
		if s.to == 0 {
			reply.Commands = append(reply.Commands, fmt.Sprintf("tail -n +%d '%s'", s.from, rd.file))
			continue
		}
		reply.Commands = append(reply.Commands, fmt.Sprintf("sed -n '%d,%dp' '%s'", s.from, s.to, rd.file))
	}
	return reply, len(spans)
}

// append writes the turn as each CLI's tools let it: a quoted heredoc
// through the shell, or, for gemini, replace on the record's last line
// (a marker, so it is found once) with that line and the turn.
func (rd *reader) append(v modelserver.Vendor, turn int, agent string) modelserver.Reply {
	text := fmt.Sprintf("\n## Turn %d · %s\n\n%s", turn, agent, rd.write(turn, agent))
	if v != modelserver.Gemini {
		return modelserver.Shell("cat >> '" + rd.file + "' <<'EOF'\n" + text + "EOF")
	}
	cur, err := os.ReadFile(rd.file)
	if err != nil {
		return modelserver.Text("cannot read the file: " + err.Error())
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(cur), "\n"), "\n")
	last := strings.TrimSuffix(lines[len(lines)-1], "\n")
	return modelserver.Tool("replace", map[string]any{"file_path": rd.file, "instruction": "Append my turn at the very end of the file.",
		"old_string": last, "new_string": last + "\n" + strings.TrimSuffix(text, "\n")})
}

// nonce is the word planted in the body of the entry of turn t: a session
// whose tool results hold it read that entry, at least as far as there.
func nonce(t int) string { return fmt.Sprintf("n0nce%04dq", t) }

// argument is a turn's body: prose of about 1.6 KB, as debaters write,
// the same for the same turn in every run, with the turn's nonce at the
// end of its last paragraph, so a read cut anywhere before it misses it.
func argument(turn int, _ string) string {
	words := strings.Fields(`the proposal would return every error as a problem details object with a stable type
uri and a short title while the detail field carries what went wrong for this request only and clients
read the status from the response itself rather than from the body which keeps proxies honest about
retries we still disagree on whether validation errors list every field at once or stop at the first
one and on how a client learns that a type uri is permanent enough to branch on in its own code paths`)
	rnd := rand.New(rand.NewPCG(uint64(turn), 7))
	var b strings.Builder
	for p := 0; p < 6; p++ {
		for s := 0; s < 3; s++ {
			n := 10 + rnd.IntN(12)
			for i := 0; i < n; i++ {
				w := words[rnd.IntN(len(words))]
				if i == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				b.WriteString(w)
				if i < n-1 {
					b.WriteByte(' ')
				}
			}
			b.WriteString(". ")
		}
		if p == 5 {
			fmt.Fprintf(&b, "Reference %s.", nonce(turn))
		}
		b.WriteString("\n\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// sessions groups the model calls of a run by the turn each session was
// started for.
func sessions(srv *modelserver.Server) map[int][]*modelserver.Request {
	out := map[int][]*modelserver.Request{}
	for _, r := range srv.Requests() {
		if r.Vendor == "" || isRouting(r) {
			continue
		}
		if turn, _, _ := promptTurn(r); turn > 0 {
			out[turn] = append(out[turn], r)
		}
	}
	return out
}

// unseen are the earlier turns whose entries never reached the session
// of turn t (their nonces are not in its tool results).
func unseen(reqs []*modelserver.Request, t int) []int {
	var want []string
	for k := 1; k < t; k++ {
		want = append(want, nonce(k))
	}
	got := modelserver.Reached(reqs, want)
	var missed []int
	for k := 1; k < t; k++ {
		if !got[nonce(k)] {
			missed = append(missed, k)
		}
	}
	return missed
}

// ranges writes turn numbers short: "1-10, 21-29".
func ranges(ts []int) string {
	slices.Sort(ts)
	var parts []string
	for i := 0; i < len(ts); {
		j := i
		for j+1 < len(ts) && ts[j+1] == ts[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ts[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ts[i], ts[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
