package walkie

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The chain: the genesis hash covers the header (front matter and
// briefing); each entry's hash covers the previous hash (through the
// marker's prev= field) and the entry's own bytes. Stamping an entry so
// costs the size of the entry, yet any edit above it changes a hash.

const hashPrefix = "sha256:"

// TimeFormat is how times are written in markers and logs: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// GenesisHash is the chain hash before the first entry.
func GenesisHash(header []byte) string {
	s := sha256.Sum256(header)
	return hashPrefix + hex.EncodeToString(s[:])
}

// markerPrefix is the marker line up to its hash field; the hash covers it,
// so seq, author, time, the tags and prev cannot be changed either. An
// untyped entry's prefix is what it was before format 3: every record
// written before it verifies as it is.
func markerPrefix(mk Marker) string {
	// Built by hand rather than with Sprintf: Verify calls this for every
	// entry of the record.
	b := make([]byte, 0, 192)
	b = append(b, "<!-- walkie seq="...)
	b = strconv.AppendInt(b, int64(mk.Seq), 10)
	if mk.Turn > 0 {
		b = append(b, " turn="...)
		b = strconv.AppendInt(b, int64(mk.Turn), 10)
	}
	b = append(b, " agent="...)
	b = append(b, mk.Agent...)
	b = append(b, " at="...)
	b = mk.At.UTC().AppendFormat(b, TimeFormat)
	b = mk.Tags.appendMarkerFields(b)
	b = append(b, " prev="...)
	b = append(b, mk.Prev...)
	return string(b)
}

// entryHash is the chain hash after an entry whose bytes before the marker
// line are content.
func entryHash(content []byte, mk Marker) string {
	h := sha256.New()
	h.Write(content)
	h.Write([]byte(markerPrefix(mk)))
	return hashPrefix + hex.EncodeToString(h.Sum(nil))
}

// stamp fills in the marker's hash and returns its line, newline
// included, in the shape of the file's format: the whole prefix and hash
// before format 4, the compact line from it on. The hash is the same
// function of the same fields in both.
func stamp(content []byte, mk *Marker, format int) []byte {
	mk.At = mk.At.UTC().Truncate(time.Millisecond)
	mk.Hash = entryHash(content, *mk)
	if format >= FormatCompact {
		mk.Short = shortTag(mk.Hash)
		return compactMarker(*mk)
	}
	return []byte(markerPrefix(*mk) + " hash=" + mk.Hash + " -->\n")
}

// FormatCompact is the format of compact marker lines, which every file
// walkie init writes: `<!-- walkie seq=N at=TIME h=TAG -->`, about 35
// tokens where a format-3 marker costs about 113, because every agent
// reads every marker of the record every turn. The chain is the same:
// each entry's hash is computed exactly as in format 3 (over the
// previous hash, the entry's bytes, and its seq, turn, author, time and
// tags), from the full previous hash; the line shows what cannot be read
// from the entry itself (seq, time) and the first 128 bits of the hash.
// Turn and author come from the heading, type, verdict and refs from the
// trailer lines, all of which the hash covers. A format-4 file may use
// everything formats 2 and 3 do; records of formats 1 to 3 keep their
// markers, every one of them, and verify as they are.
const FormatCompact = 4

// shortTagBytes is how much of an entry's chain hash its compact marker
// shows. An edit anywhere changes the full hash from that entry on, so
// every later tag disagrees too; only the last entry rests on its 128
// bits alone, and there the log's last_hash, which is whole, is
// compared as well.
const shortTagBytes = 16

// compactTimeFormat is at= of a compact marker: ISO 8601's basic format,
// UTC, milliseconds, the same instant TimeFormat writes in fewer tokens.
const compactTimeFormat = "20060102T150405.000Z"

// shortTag is the compact marker's h= for a "sha256:HEX" chain hash:
// its first shortTagBytes bytes in unpadded base64url.
func shortTag(hash string) string {
	raw, err := hex.DecodeString(strings.TrimPrefix(hash, hashPrefix))
	if err != nil || len(raw) < shortTagBytes {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(raw[:shortTagBytes])
}

// compactMarker is the marker line of format 4, newline included.
func compactMarker(mk Marker) []byte {
	b := make([]byte, 0, 80)
	b = append(b, "<!-- walkie seq="...)
	b = strconv.AppendInt(b, int64(mk.Seq), 10)
	b = append(b, " at="...)
	b = mk.At.UTC().AppendFormat(b, compactTimeFormat)
	b = append(b, " h="...)
	b = append(b, mk.Short...)
	return append(b, " -->\n"...)
}

// parseCompactMarker reads the fields of a format-4 marker line: seq, at
// and h, each once, and the line must be byte for byte the one
// compactMarker writes for them, so the line and the fields are one to
// one and no edit of it goes unseen.
func parseCompactMarker(text []byte, fields []string) (Marker, error) {
	var mk Marker
	if len(fields) != 3 {
		return mk, fmt.Errorf("a marker of format %d holds seq=, at= and h=, and this one has %d fields", FormatCompact, len(fields))
	}
	for i, key := range []string{"seq", "at", "h"} {
		k, v, ok := strings.Cut(fields[i], "=")
		if !ok || k != key {
			return mk, fmt.Errorf("field %q where %s= was expected", fields[i], key)
		}
		var err error
		switch k {
		case "seq":
			mk.Seq, err = strconv.Atoi(v)
			if err == nil && (mk.Seq < 1 || strconv.Itoa(mk.Seq) != v) {
				err = fmt.Errorf("not a sequence number")
			}
		case "at":
			mk.At, err = time.Parse(compactTimeFormat, v)
		case "h":
			if raw, derr := base64.RawURLEncoding.Strict().DecodeString(v); derr != nil || len(raw) != shortTagBytes {
				err = fmt.Errorf("not %d bytes of base64url", shortTagBytes)
			}
			mk.Short = v
		}
		if err != nil {
			return mk, fmt.Errorf("field %q: %w", fields[i], err)
		}
	}
	if want := compactMarker(mk); string(want[:len(want)-1]) != string(text) {
		return mk, fmt.Errorf("not the line walkie writes for it, %q", want[:len(want)-1])
	}
	return mk, nil
}

// linkCompact fills in what a format-4 marker line leaves to the entry:
// turn and author from the heading, tags from the trailer lines, and the
// chain (prev and hash) recomputed from the header down, as format 3
// writes it out. Verify then compares each hash with its line's h=.
func (d *Doc) linkCompact() {
	prev := GenesisHash(d.Header)
	for i := range d.Entries {
		e := &d.Entries[i]
		mk := &e.Marker
		mk.Turn, mk.Agent, mk.Prev = e.Turn, e.Agent, prev
		if t, _, pr := bodyTags(e.Body); pr == nil {
			mk.Tags = t
		}
		mk.Hash = entryHash(e.Raw[:len(e.Raw)-len(markerLine(e))], *mk)
		prev = mk.Hash
	}
}

// BriefingHash is the value pinned in `briefing_sha256` by approval.
func BriefingHash(briefing []byte) string {
	s := sha256.Sum256(briefing)
	return hex.EncodeToString(s[:])
}

// Verify checks the whole record: the chain from the header through every
// entry, sequence and turn numbers, authors in turn order, and the pinned
// briefing hash. It returns the first problem, naming its entry and line.
// A non-blank tail is reported as a *TornTailError after the chain checks.
func (d *Doc) Verify() error {
	if err := d.checkBriefing(); err != nil {
		return err
	}
	prev := GenesisHash(d.Header)
	turn := 0
	closedAt := 0 // the turn that closed the thread, if one did
	for i := range d.Entries {
		e := &d.Entries[i]
		mk := e.Marker
		bad := func(format string, args ...any) error {
			return &ChainError{File: d.File, Line: e.Line, Seq: i + 1, Msg: fmt.Sprintf(format, args...), Fix: fixRestore}
		}
		if mk.Seq != i+1 {
			return bad("marker says seq=%d where %d was expected: an entry was removed, inserted or moved", mk.Seq, i+1)
		}
		if d.Meta.Walkie >= FormatCompact {
			// Parse linked the chain; the line holds the tag to check.
			if shortTag(mk.Hash) != mk.Short {
				if i == 0 {
					return bad("the front matter or briefing was edited after the first entry was recorded, or this entry's text was")
				}
				return bad("its text was changed after it was recorded")
			}
		} else if mk.Prev != prev {
			if i == 0 {
				return bad("the front matter or briefing was edited after the first entry was recorded")
			}
			return bad("does not follow entry %d: entries were removed, inserted or reordered", i)
		} else if entryHash(e.Raw[:len(e.Raw)-len(markerLine(e))], mk) != mk.Hash {
			return bad("its text was changed after it was recorded")
		}
		if mk.Agent != e.Agent {
			return bad("heading names %q but the marker recorded %q", e.Agent, mk.Agent)
		}
		if e.Kind == KindTurn {
			turn++
			want := d.Meta.TurnAgent(turn)
			if e.Turn != turn || mk.Turn != turn {
				return bad("turn %d where turn %d was expected", e.Turn, turn)
			}
			if e.Agent != want {
				return bad("turn %d was written by %q but it was %q's turn", turn, e.Agent, want)
			}
		} else if mk.Turn != 0 {
			return bad("supervisor entry carries a turn number")
		}
		if d.Meta.IsTyped() {
			if err := checkRecordedTags(e); err != nil {
				return bad("%v", err)
			}
			if closedAt > 0 && e.Kind == KindTurn {
				return bad("turn %d follows the close in turn %d: nothing but supervisor entries follows a close", e.Turn, closedAt)
			}
			if e.Kind == KindTurn && mk.Tags.Type == TypeClose {
				closedAt = e.Turn
			}
		}
		prev = mk.Hash
	}
	if !isBlank(d.Tail) {
		return &TornTailError{File: d.File, Line: d.TailLine + leadingBlankLines(d.Tail), Bytes: len(d.Tail)}
	}
	return nil
}

// checkBriefing compares the briefing with the hash pinned by approval.
func (d *Doc) checkBriefing() error {
	if d.Meta.BriefingSHA256 != "" && BriefingHash(d.Briefing) != d.Meta.BriefingSHA256 {
		return &InputError{File: d.File, Line: d.BriefingLine, Msg: "the briefing changed after it was approved (its sha256 no longer matches briefing_sha256)",
			Fix: "restore the approved text from git, or, before the first turn, re-approve with `walkie brief approve`"}
	}
	return nil
}

// markerLine returns the marker line of e as it stands in Raw.
func markerLine(e *Entry) []byte {
	raw := e.Raw
	end := len(raw)
	i := end - 1
	if i >= 0 && raw[i] == '\n' {
		i--
	}
	for i >= 0 && raw[i] != '\n' {
		i--
	}
	return raw[i+1 : end]
}

func leadingBlankLines(b []byte) int {
	n := 0
	for _, l := range splitLines(b, 0, 0) {
		if !isBlank(l.text) {
			break
		}
		n++
	}
	return n
}

// LastHash is the chain hash after the last entry.
func (d *Doc) LastHash() string {
	if len(d.Entries) == 0 {
		return GenesisHash(d.Header)
	}
	return d.Entries[len(d.Entries)-1].Marker.Hash
}

// checkRecordedTags checks a recorded entry's tags (format 3): what its
// trailer lines say is what its marker records, and its author may give
// its type. The hash covers both, so a difference is walkie's bug or a
// record rebuilt by hand.
func checkRecordedTags(e *Entry) error {
	bt, _, pr := bodyTags(e.Body)
	switch {
	case pr != nil:
		return fmt.Errorf("its trailer lines do not read: %v", pr.msg)
	case !bt.Equal(e.Marker.Tags):
		return fmt.Errorf("its text says %s but its marker records %s", describeTags(bt), describeTags(e.Marker.Tags))
	}
	return checkTagAuthor(e.Marker.Tags, e.Kind == KindSupervisor)
}

// describeTags is tags in a message: "type verdict approve, refs main@abc".
func describeTags(t Tags) string {
	if t.IsZero() {
		return "no type or refs"
	}
	var parts []string
	if t.Type != "" {
		parts = append(parts, "type "+t.Kind())
	}
	if len(t.Refs) > 0 {
		parts = append(parts, "refs "+strings.Join(t.RefStrings(), ","))
	}
	return strings.Join(parts, ", ")
}
