package walkie

import (
	"bytes"
	"cmp"
)

// ReadPieceBytes bounds one piece of the record an agent reads in one
// tool call. Every CLI caps what one call returns, each differently, and
// cuts the rest without the model being able to tell what it missed:
// claude 2.1.197 keeps a 2 KB preview of a shell command's output past
// 30,000 characters, codex 0.171.0 cuts the middle of an output past
// about 10,000 of its tokens (4 bytes each), gemini 0.61.0 reads at most
// 2,000 lines of a file. A piece of at most 20 KiB and ReadPieceLines
// lines is under all three (docs/agents.md, "Reading the record").
const ReadPieceBytes = 20 << 10

// ReadPieceLines bounds the lines of one piece, for a record of short lines.
const ReadPieceLines = 1000

// ReadPiece is one range of lines of the record, read in one call.
type ReadPiece struct {
	From, To int // 1-based lines, inclusive; To is 0 for "to the end of the file"
	Bytes    int // the bytes of the range when it was planned
	// First and Last are the first and last entries the range holds, by
	// sequence number; 0 for the header (front matter and briefing).
	First, Last int
	// Part is set when the range holds part of an entry only: one longer
	// than a piece, cut at its lines.
	Part bool
}

// Reading is how an agent reads the whole record in pieces, none of them
// larger than a CLI shows whole, and what is new to it since its own
// last turn. It is planned from the record as it stands before the turn
// and holds only line numbers and counts: nothing of the record's text
// reaches a prompt through it.
type Reading struct {
	Lines  int         // lines of the record
	Pieces []ReadPiece // in order, covering line 1 to the end; the last is open-ended
	// OwnTurn is the agent's own last turn, 0 when it has none; that turn
	// answered every entry before it.
	OwnTurn int
	// NewFrom is the first line after the agent's own last turn (line 1
	// when it has none); NewFirstTurn and NewLastTurn are the turns from
	// there on (0 when there are none), NewEntries all the entries.
	NewFrom                   int
	NewFirstTurn, NewLastTurn int
	NewEntries                int
}

// Reading plans how agent reads the record: pieces that end at entry
// boundaries (an entry longer than a piece is split at its lines), each
// of at most maxBytes and ReadPieceLines lines, planned from the top so
// the pieces of one turn are the pieces of the next but for the last.
func (d *Doc) Reading(agent string, maxBytes int) Reading {
	units := d.readUnits(maxBytes)
	var r Reading
	if len(units) > 0 {
		r.Lines = units[len(units)-1].to
	}
	var cur *ReadPiece
	lines := 0
	for _, u := range units {
		if cur != nil && (cur.Bytes+u.bytes > maxBytes || lines+u.to-u.from+1 > ReadPieceLines) {
			cur = nil
		}
		if cur == nil {
			r.Pieces = append(r.Pieces, ReadPiece{From: u.from, First: u.seq})
			cur, lines = &r.Pieces[len(r.Pieces)-1], 0
		}
		cur.To, cur.Bytes, cur.Last = u.to, cur.Bytes+u.bytes, u.seq
		cur.Part = cur.Part || u.part
		lines += u.to - u.from + 1
	}
	if cur != nil {
		// Whatever is appended before the agent reads (a supervisor's
		// note) is in the last piece too.
		cur.To = 0
	}
	r.NewFrom = 1
	for i := len(d.Entries) - 1; i >= 0; i-- {
		if e := &d.Entries[i]; e.Kind == KindTurn && e.Agent == agent {
			r.OwnTurn, r.NewFrom = e.Turn, e.MarkLine+1
			break
		}
	}
	for i := range d.Entries {
		e := &d.Entries[i]
		if e.MarkLine < r.NewFrom {
			continue
		}
		r.NewEntries++
		if e.Kind == KindTurn {
			r.NewFirstTurn = cmp.Or(r.NewFirstTurn, e.Turn)
			r.NewLastTurn = e.Turn
		}
	}
	return r
}

// readUnit is a run of lines a piece boundary may not cut: the header, an
// entry, or, for an entry longer than a piece, a slice of its lines.
type readUnit struct {
	from, to int // 1-based lines, inclusive
	bytes    int
	seq      int  // the entry's sequence number; 0 for the header
	part     bool // a slice of an entry longer than a piece
}

// readUnits are the record's lines as units, in order.
func (d *Doc) readUnits(maxBytes int) []readUnit {
	var us []readUnit
	header := bytes.Count(d.Header, []byte("\n"))
	if len(d.Header) > 0 && d.Header[len(d.Header)-1] != '\n' {
		header++
	}
	if header > 0 {
		us = append(us, readUnit{from: 1, to: header, bytes: len(d.Header)})
	}
	next := header + 1
	for i := range d.Entries {
		e := &d.Entries[i]
		us = append(us, splitUnit(e.Raw, next, e.Marker.Seq, maxBytes)...)
		next = e.MarkLine + 1
	}
	return us
}

// splitUnit is one entry as units: whole when it fits in a piece, else
// cut at its lines into runs of at most maxBytes and ReadPieceLines (a
// single longer line stays whole: no tool reads less than a line).
func splitUnit(raw []byte, from, seq, maxBytes int) []readUnit {
	lines := bytes.SplitAfter(raw, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(raw) <= maxBytes && len(lines) <= ReadPieceLines {
		return []readUnit{{from: from, to: from + len(lines) - 1, bytes: len(raw), seq: seq}}
	}
	var us []readUnit
	u := readUnit{from: from, to: from - 1, seq: seq, part: true}
	for _, l := range lines {
		if u.to >= u.from && (u.bytes+len(l) > maxBytes || u.to-u.from+1 >= ReadPieceLines) {
			us = append(us, u)
			u = readUnit{from: u.to + 1, to: u.to, seq: seq, part: true}
		}
		u.to++
		u.bytes += len(l)
	}
	return append(us, u)
}
