package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/urfave/cli/v2"
)

// jsonExporter is --json and --jq as gh has them, on every command that
// reads: the command's JSON view, cut to the fields asked for, then run
// through a jq expression (gojq, the jq gh itself embeds). A command
// prints its own view through it, the one its text output renders, so
// the two cannot disagree.
type jsonExporter struct {
	fields []string    // nil: every field
	query  *gojq.Query // nil: no --jq
	jq     string      // the expression as typed, for its errors
	lines  bool        // one value per line (log), each cut and queried
	inline bool        // the value on one line (gate's finding)
}

// inLines makes e print a list one element per line, each cut to the
// fields and queried on its own (walkie log's JSON lines).
func (e *jsonExporter) inLines() *jsonExporter {
	if e != nil {
		e.lines = true
	}
	return e
}

// onOneLine makes e print its value on one line.
func (e *jsonExporter) onOneLine() *jsonExporter {
	if e != nil {
		e.inline = true
	}
	return e
}

// fieldsValue is --json's value: bare, every field; "--json a,b" or
// "--json=a,b", those. It is a boolean flag to Go's flag package, so that
// a bare --json is not given the next argument; interspersed hands it a
// following argument only when that names its fields.
type fieldsValue struct {
	avail []string // every field the command may print, sorted
	set   bool
	names []string
}

func (v *fieldsValue) IsBoolFlag() bool { return true }
func (v *fieldsValue) String() string   { return strings.Join(v.names, ",") }

// Set is given "true" for a bare --json (every field), else the list.
func (v *fieldsValue) Set(s string) error {
	v.set, v.names = true, nil
	if s == "true" {
		return nil
	}
	for n := range strings.SplitSeq(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			v.names = append(v.names, n)
		}
	}
	return nil
}

// fieldList is what a field list looks like: names of lower-case letters,
// digits and underscores, comma separated.
var fieldList = regexp.MustCompile(`^[a-z_][a-z0-9_]*(,[a-z_][a-z0-9_]*)*$`)

// takes reports whether the argument after a bare --json is its fields
// ("--json status,round"), not the command's FILE or DIR: it looks like
// a field list and either names only fields there are or names no file
// (then an unknown field is said as one, not as an extra argument).
func (v *fieldsValue) takes(arg string) bool {
	if !fieldList.MatchString(arg) {
		return false
	}
	if v.unknown(strings.Split(arg, ",")) == "" {
		return true
	}
	_, err := os.Lstat(arg)
	return errors.Is(err, fs.ErrNotExist)
}

// unknown is the first of names that is no field of v's, or "".
func (v *fieldsValue) unknown(names []string) string {
	for _, n := range names {
		if !slices.Contains(v.avail, n) {
			return n
		}
	}
	return ""
}

// jsonFlags are --json and --jq for a command whose JSON view is one of
// views (a value of each type it may print).
func jsonFlags(views ...any) []cli.Flag {
	var avail []string
	for _, v := range views {
		avail = append(avail, jsonFields(reflect.TypeOf(v))...)
	}
	slices.Sort(avail)
	return []cli.Flag{
		&cli.GenericFlag{Name: "json", Value: &fieldsValue{avail: slices.Compact(avail)},
			Usage: "print JSON: every field, or only the comma-separated `fields` (--json=status,round)"},
		&cli.StringFlag{Name: "jq", Usage: "filter the JSON through this jq `expression` (implies --json)"},
	}
}

// exporterOf is what --json and --jq ask of c's command: nil for text.
// A --jq that does not parse is bad input before anything runs.
func exporterOf(c *cli.Context) (*jsonExporter, error) {
	v, _ := c.Generic("json").(*fieldsValue)
	expr := c.String("jq")
	if (v == nil || !v.set) && expr == "" {
		return nil, nil
	}
	e := &jsonExporter{jq: expr}
	if v != nil {
		e.fields = v.names
		if n := v.unknown(e.fields); n != "" {
			return nil, withCode(exitBadInput, fmt.Errorf("--json: no field %q; the fields are: %s", n, strings.Join(v.avail, ", ")))
		}
	}
	if expr != "" {
		q, err := gojq.Parse(expr)
		if err != nil {
			return nil, withCode(exitBadInput, fmt.Errorf("--jq %q: %w", expr, err))
		}
		e.query = q
	}
	return e, nil
}

// Write prints v as the exporter asks: indented JSON of every field, or
// of the fields asked for (of each element, when v is a list), or what
// the jq expression makes of it. An unknown field is bad input naming
// the fields there are, and nothing is written.
func (e *jsonExporter) Write(w io.Writer, v any) error {
	if e == nil {
		e = &jsonExporter{} // --format json: every field
	}
	if e.fields == nil && e.query == nil {
		// Every field, in the order the view declares them.
		if e.lines {
			return encodeLines(w, v)
		}
		return encodeJSON(w, v, !e.inline)
	}
	if e.fields != nil {
		if err := e.checkFields(v); err != nil {
			return err
		}
	}
	data, err := toData(v)
	if err != nil {
		return err
	}
	if e.lines {
		if list, ok := data.([]any); ok {
			for _, item := range list {
				if err := e.writeOne(w, item, false); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return e.writeOne(w, data, !e.inline)
}

func (e *jsonExporter) writeOne(w io.Writer, data any, indent bool) error {
	if e.fields != nil {
		data = selectFields(data, e.fields)
	}
	if e.query == nil {
		return encodeJSON(w, data, indent)
	}
	var b bytes.Buffer
	it := e.query.Run(data)
	for {
		out, ok := it.Next()
		if !ok {
			break
		}
		if err, ok := out.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break
			}
			return withCode(exitBadInput, fmt.Errorf("--jq %q: %w", e.jq, err))
		}
		// As gh and jq -r print them: a string as its text, anything
		// else as one line of JSON.
		if s, ok := out.(string); ok {
			b.WriteString(s + "\n")
		} else if err := encodeJSON(&b, out, false); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// checkFields is an unknown field's error, naming the fields v has.
func (e *jsonExporter) checkFields(v any) error {
	have := jsonFields(reflect.TypeOf(v))
	for _, f := range e.fields {
		if !slices.Contains(have, f) {
			slices.Sort(have)
			return withCode(exitBadInput, fmt.Errorf("--json: no field %q here; the fields are: %s", f, strings.Join(have, ", ")))
		}
	}
	return nil
}

// toData is v as jq sees it: maps, lists, strings, booleans, and
// numbers as json.Numbers (as the gojq command reads its input), so that
// a large integer keeps every digit.
func toData(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var data any
	if err := dec.Decode(&data); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	return data, nil
}

// selectFields is data with only the fields named, of each element when
// it is a list; a field the value left out (empty) is null.
func selectFields(data any, fields []string) any {
	switch x := data.(type) {
	case map[string]any:
		out := make(map[string]any, len(fields))
		for _, f := range fields {
			out[f] = x[f]
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = selectFields(e, fields)
		}
		return out
	}
	return data
}

// encodeJSON writes v, indented or on one line.
func encodeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// encodeLines writes each element of the list v on a line of its own.
func encodeLines(w io.Writer, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return encodeJSON(w, v, false)
	}
	enc := json.NewEncoder(w)
	for i := range rv.Len() {
		if err := enc.Encode(rv.Index(i).Interface()); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields are the JSON names of t's fields (of its elements, for a
// list), embedded structs' included: what --json may select.
func jsonFields(t reflect.Type) []string {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		out = append(out, cmp.Or(name, f.Name))
	}
	return out
}
