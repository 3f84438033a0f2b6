package session

import (
	"bytes"
	"regexp"
	"slices"
)

// The kernel tells nobody but the process what the sandbox refused (an
// audit log aside, which needs root and auditd), so walkie records what
// the session's own output says: the lines a refused open, write or exec
// prints, in every tool's words, and the path each names. What an agent
// keeps to itself is not seen; what it prints may be forged. The boundary
// does not depend on either.

const (
	// maxRefusals bounds the report: a loop of refused reads must not
	// grow the attempt's record.
	maxRefusals = 32
	// maxRefusalLine bounds one recorded entry, and the part of a line
	// kept while it is still arriving.
	maxRefusalLine = 512
	// pathReach is how far from the words of a refusal its path is looked
	// for: before them ("cat: /x: Permission denied") or after them
	// (Python's "Permission denied: '/x'", Node's "EACCES: …, open '/x'").
	pathReach = 300
)

var (
	refusalRE = regexp.MustCompile(`(?i)permission denied|operation not permitted|\bEACCES\b|\bEPERM\b`)
	pathRE    = regexp.MustCompile(`(?:~|\.{0,2})/[^\s'"` + "`" + `:,;()\[\]{}<>|\\]+`)
)

// refusalScanner collects the refusals in a session's plain-text output,
// line by line as it streams.
type refusalScanner struct {
	line  []byte
	found []string
}

// feed takes the next piece of plain text.
func (r *refusalScanner) feed(text []byte) {
	for len(text) > 0 && len(r.found) < maxRefusals {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			r.line = appendCapped(r.line, text)
			return
		}
		r.line = appendCapped(r.line, text[:i])
		r.scan(r.line)
		r.line, text = r.line[:0], text[i+1:]
	}
}

// close scans a last line without a newline.
func (r *refusalScanner) close() {
	if len(r.line) > 0 {
		r.scan(r.line)
		r.line = nil
	}
}

func appendCapped(dst, b []byte) []byte {
	return append(dst, b[:min(len(b), max(0, maxRefusalLine-len(dst)))]...)
}

func (r *refusalScanner) scan(line []byte) {
	for _, m := range refusalRE.FindAllIndex(line, -1) {
		what := refusedPath(line, m[0], m[1])
		if what == "" {
			what = string(bytes.TrimSpace(line))
		}
		if !slices.Contains(r.found, what) && len(r.found) < maxRefusals {
			r.found = append(r.found, what)
		}
	}
}

// refusedPath is the path nearest to the refusal at line[start:end]:
// the last one before it, else the first one after it.
func refusedPath(line []byte, start, end int) string {
	before := line[max(0, start-pathReach):start]
	if all := pathRE.FindAll(before, -1); len(all) > 0 {
		return string(all[len(all)-1])
	}
	if p := pathRE.Find(line[end:min(len(line), end+pathReach)]); p != nil {
		return string(p)
	}
	return ""
}
