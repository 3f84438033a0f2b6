package activity

import (
	"bytes"
	"encoding/json"
	"strings"
)

// maxField bounds each value readFields keeps, in bytes: a command or a
// path is shown on one line; old_string and content only need to exist.
const maxField = 1 << 10

// maxDepth is the deepest nesting readFields names paths in. The fields
// it reads are at most five levels down; below that it only follows the
// brackets, so a line of "[[[[…" costs no more than a flat one.
const maxDepth = 8

// readFields reads the scalar values at the wanted paths of the JSON
// object that starts line, as far as the line goes: a line cut short (at
// maxLine, or by the end of output) still gives every value before the
// cut. A path joins object keys with "." and skips arrays, so
// "message.content.name" is the name of a content block; of an array of
// objects only the last element counts, as a tool call is the last block
// of claude's message. A value that is not a string is kept as its JSON
// text (true, 0, null); a key whose value is cut off is there with "".
func readFields(line []byte, want map[string]bool) map[string]string {
	got := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var w walker
	for {
		tok, err := dec.Token()
		if err != nil {
			return got // the end of the line, or where it stops being JSON
		}
		path, value, what := w.step(tok)
		switch {
		case w.newElement != "":
			// A new element of an array of objects: forget the
			// previous element's values.
			for k := range got {
				if strings.HasPrefix(k, w.newElement+".") {
					delete(got, k)
				}
			}
			w.newElement = ""
		case what == aKey && want[path]:
			// Seen, even if its value is cut off: that old_string
			// exists tells an edit.
			got[path] = ""
		case what == aValue && want[path]:
			got[path] = value[:min(len(value), maxField)]
		}
		if w.done() {
			return got
		}
	}
}

// walker follows json.Decoder's tokens and names the path of each value.
type walker struct {
	stack      []frame
	started    bool
	newElement string // set when an object begins inside an array: the array's path
}

type frame struct {
	object  bool
	key     string // the key whose value comes next (objects)
	wantKey bool   // the next string is a key
}

// path joins the keys of the enclosing objects.
func (w *walker) path() string {
	var keys []string
	for _, f := range w.stack {
		if f.object {
			keys = append(keys, f.key)
		}
	}
	return strings.Join(keys, ".")
}

// What a token was.
const (
	aDelim = iota // a bracket or brace
	aKey          // an object key: path names its value
	aValue        // a scalar value at path
)

// step takes one token and says what it was; for a key, the path of its
// value; for a scalar value, its path and text.
func (w *walker) step(tok json.Token) (path, value string, what int) {
	var top *frame
	if n := len(w.stack); n > 0 {
		top = &w.stack[n-1]
	}
	if d, ok := tok.(json.Delim); ok {
		switch d {
		case '{', '[':
			if d == '{' && top != nil && !top.object && len(w.stack) <= maxDepth {
				w.newElement = w.path()
			}
			w.started = true
			w.stack = append(w.stack, frame{object: d == '{', wantKey: d == '{'})
		case '}', ']':
			w.stack = w.stack[:len(w.stack)-1]
			w.valueDone()
		}
		return "", "", aDelim
	}
	if top == nil {
		w.started = true // a bare scalar: not an object, nothing to read
		return "", "", aDelim
	}
	deep := len(w.stack) > maxDepth
	if s, ok := tok.(string); ok && top.object && top.wantKey {
		top.key, top.wantKey = s, false
		if deep {
			return "", "", aDelim
		}
		return w.path(), "", aKey
	}
	if deep {
		w.valueDone()
		return "", "", aDelim
	}
	path = w.path()
	switch v := tok.(type) {
	case string:
		value = v
	case json.Number:
		value = v.String()
	case bool:
		value = "false"
		if v {
			value = "true"
		}
	case nil:
		value = "null"
	}
	w.valueDone()
	return path, value, aValue
}

// valueDone marks the value of the innermost object's key as read.
func (w *walker) valueDone() {
	if n := len(w.stack); n > 0 && w.stack[n-1].object {
		w.stack[n-1].wantKey = true
	}
}

// done reports that the first value of the line has been read whole.
func (w *walker) done() bool { return w.started && len(w.stack) == 0 }
