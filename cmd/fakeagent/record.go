package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// headingRE matches a turn heading as the walkie format writes it: the
// separator is U+00B7 MIDDLE DOT with one space on each side.
var headingRE = regexp.MustCompile(`(?m)^## Turn (\d+) · `)

// record is what the agent learns from reading the file.
type record struct {
	id           string
	turns        int // turn headings seen
	participants []string
	// lastBlocker is the author of the last turn that requests changes:
	// a round-table verdict turn whose body starts "**request changes**".
	lastBlocker string
}

// turnRE is a turn heading with its author and what follows it.
var turnRE = regexp.MustCompile(`(?m)^## Turn \d+ · (\S+)\n\s*(\S*)`)

// parseRecord reads the front matter's id and participants, counts turns
// and finds the last one that requests changes.
func parseRecord(b []byte) (record, error) {
	var r record
	if fm, ok := frontMatter(b); ok {
		var meta struct {
			ID           string   `yaml:"id"`
			Participants []string `yaml:"participants"`
			Implementer  string   `yaml:"implementer"`
			Reviewers    []string `yaml:"reviewers"`
		}
		if err := yaml.Unmarshal(fm, &meta); err != nil {
			return r, fmt.Errorf("front matter: %w", err)
		}
		r.id, r.participants = meta.ID, meta.Participants
		if r.participants == nil && meta.Implementer != "" {
			r.participants = append([]string{meta.Implementer}, meta.Reviewers...)
		}
	}
	r.turns = len(headingRE.FindAllIndex(b, -1))
	for _, m := range turnRE.FindAllSubmatch(b, -1) {
		if string(m[2]) == "**request" {
			r.lastBlocker = string(m[1])
		}
	}
	return r, nil
}

// frontMatter returns the YAML between a leading "---" line and the next
// "---" line.
func frontMatter(b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return nil, false
	}
	if bytes.HasPrefix(rest, []byte("---\n")) {
		return nil, true
	}
	i := bytes.Index(rest, []byte("\n---\n"))
	if i < 0 {
		if bytes.HasSuffix(rest, []byte("\n---")) {
			return rest[:len(rest)-4], true
		}
		return nil, false
	}
	return rest[:i+1], true
}

// round of a turn: participants take turns in order, one round each.
func roundOf(turn, participants int) int {
	if participants < 1 {
		participants = 1
	}
	if turn < 1 {
		return 1
	}
	return (turn-1)/participants + 1
}

// turnText renders one turn as the agent appends it.
func turnText(heading, body, signer string) string {
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString(heading)
	b.WriteString("\n")
	b.WriteString(strings.TrimRight(body, "\n"))
	b.WriteString("\n")
	if signer != "" {
		b.WriteString("Signed-off-by: " + signer + "\n")
	}
	return b.String()
}

func heading(turn int, agent string) string {
	return fmt.Sprintf("## Turn %d · %s", turn, agent)
}

// appendText appends s to the file in one write, as an agent's edit tool
// would; O_APPEND makes it land at the end even if the file grew.
func appendText(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// wordRE finds a word worth changing.
var wordRE = regexp.MustCompile(`[A-Za-z]{3,}`)

// editSection changes the first word of the section that starts at the
// first line matching start (the line itself is kept), before the next
// "## " heading. It returns the edited file.
func editSection(b []byte, start *regexp.Regexp) ([]byte, error) {
	loc := start.FindIndex(b)
	if loc == nil {
		return nil, fmt.Errorf("no section matching %s", start)
	}
	body := loc[1]
	if i := bytes.IndexByte(b[body:], '\n'); i >= 0 {
		body += i + 1
	} else {
		return nil, errors.New("section has no body")
	}
	end := len(b)
	if i := bytes.Index(b[body:], []byte("\n## ")); i >= 0 {
		end = body + i
	}
	w := wordRE.FindIndex(b[body:end])
	if w == nil {
		return nil, errors.New("section has no word to change")
	}
	out := make([]byte, 0, len(b)+8)
	out = append(out, b[:body+w[0]]...)
	out = append(out, "tampered"...)
	out = append(out, b[body+w[1]:]...)
	return out, nil
}

var (
	briefingRE  = regexp.MustCompile(`(?m)^# Briefing[ \t]*$`)
	firstTurnRE = regexp.MustCompile(`(?m)^## Turn \d+ · .*$`)
)
