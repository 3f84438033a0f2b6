package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/itchyny/gojq"
)

type exportInner struct {
	Cost float64 `json:"cost_usd"`
}

type exportView struct {
	*exportInner
	ID     string   `json:"id"`
	Turns  int      `json:"turns"`
	Reason string   `json:"reason,omitempty"`
	Names  []string `json:"names"`
	Hidden string   `json:"-"`
	hidden string
}

func TestJSONFieldsOfAView(t *testing.T) {
	got := jsonFields(reflect.TypeOf(exportView{}))
	// Embedded fields are the view's own, as encoding/json flattens them;
	// "-" and unexported fields are none.
	if want := []string{"cost_usd", "id", "turns", "reason", "names"}; !slices.Equal(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
	if got := jsonFields(reflect.TypeOf([]*exportView{})); len(got) != 5 {
		t.Errorf("a list's fields are its elements': %v", got)
	}
	if got := jsonFields(reflect.TypeOf("")); got != nil {
		t.Errorf("a string has no fields: %v", got)
	}
}

func TestJSONExporterWrite(t *testing.T) {
	v := exportView{exportInner: &exportInner{Cost: 0.25}, ID: "d", Turns: 3, Names: []string{"a", "b"}}
	list := []exportView{v, {exportInner: &exportInner{}, ID: "e", Turns: 1}}
	for _, tc := range []struct {
		name   string
		e      *jsonExporter
		v      any
		want   string
		errHas string
	}{
		{name: "every field, declared order", e: &jsonExporter{}, v: v,
			want: "{\n  \"cost_usd\": 0.25,\n  \"id\": \"d\",\n  \"turns\": 3,\n  \"names\": [\n    \"a\",\n    \"b\"\n  ]\n}\n"},
		{name: "nil is every field", e: nil, v: v,
			want: "{\n  \"cost_usd\": 0.25,\n  \"id\": \"d\",\n  \"turns\": 3,\n  \"names\": [\n    \"a\",\n    \"b\"\n  ]\n}\n"},
		{name: "fields, an empty one null", e: &jsonExporter{fields: []string{"turns", "reason"}}, v: v,
			want: "{\n  \"reason\": null,\n  \"turns\": 3\n}\n"},
		{name: "fields of each element", e: &jsonExporter{fields: []string{"id"}, inline: true}, v: list,
			want: `[{"id":"d"},{"id":"e"}]` + "\n"},
		{name: "lines", e: &jsonExporter{lines: true}, v: list,
			want: `{"cost_usd":0.25,"id":"d","turns":3,"names":["a","b"]}` + "\n" + `{"cost_usd":0,"id":"e","turns":1,"names":null}` + "\n"},
		{name: "lines cut", e: &jsonExporter{lines: true, fields: []string{"turns"}}, v: list,
			want: `{"turns":3}` + "\n" + `{"turns":1}` + "\n"},
		{name: "jq: strings as text, the rest as JSON", e: jq(t, `.id, .turns, .names, .cost_usd * 2`), v: v,
			want: "d\n3\n[\"a\",\"b\"]\n0.5\n"},
		{name: "jq after the fields", e: withFields(jq(t, `keys`), "id", "turns"), v: v, want: `["id","turns"]` + "\n"},
		{name: "jq per line", e: (&jsonExporter{lines: true, query: jq(t, `select(.turns > 2) | .id`).query}), v: list, want: "d\n"},
		{name: "jq keeps a large integer's digits", e: jq(t, `.n, .n + 1`), v: map[string]int64{"n": 9007199254740993},
			want: "9007199254740993\n9007199254740994\n"},
		{name: "jq's runtime error", e: jq(t, `.id + 1`), v: v, errHas: `--jq ".id + 1": `},
		{name: "an unknown field", e: &jsonExporter{fields: []string{"id", "nope"}}, v: v, errHas: `no field "nope" here; the fields are: cost_usd, id, names, reason, turns`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			err := tc.e.Write(&b, tc.v)
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || exitCode(err) != exitBadInput {
					t.Fatalf("error %v (exit %d), want one saying %q (exit %d)", err, exitCode(err), tc.errHas, exitBadInput)
				}
				if b.Len() > 0 {
					t.Errorf("wrote %q before the error", b.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("wrote\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

func jq(t *testing.T, expr string) *jsonExporter {
	t.Helper()
	q, err := gojq.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	return &jsonExporter{query: q, jq: expr}
}

func withFields(e *jsonExporter, fields ...string) *jsonExporter {
	e.fields = fields
	return e
}

// The argument after a bare --json is its fields only when it reads as
// fields: a FILE, a DIR or a flag stays what it is.
func TestJSONTakesTheNextArgument(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir(filepath.Join(dir, "reviews"), 0o755); err != nil {
		t.Fatal(err)
	}
	v := &fieldsValue{avail: []string{"id", "reviews", "status"}}
	for arg, want := range map[string]bool{
		"status":         true,
		"id,status":      true,
		"nope":           true,  // no such file: said as an unknown field
		"reviews":        true,  // a field, even with a directory of its name
		"threads":        true,  // no file of that name
		"d.walkie.md":    false, // a FILE
		"sub/dir":        false,
		"--config":       false,
		"":               false,
		"Status":         false,
		"id,,status":     false,
		"id, status":     false,
		"id,status,":     false,
		"../d.walkie.md": false,
	} {
		if got := v.takes(arg); got != want {
			t.Errorf("takes(%q) = %v, want %v", arg, got, want)
		}
	}
	// An unknown word that names a directory is the directory.
	if v := (&fieldsValue{avail: []string{"id"}}); v.takes("reviews") {
		t.Error("took the directory reviews for a field")
	}
}

func TestJSONFlagAmongArguments(t *testing.T) {
	app := newApp(newFactory(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}))
	for _, tc := range []struct{ in, want []string }{
		{[]string{"walkie", "status", "d.walkie.md", "--json", "status,round"}, []string{"walkie", "status", "--json=status,round", "--", "d.walkie.md"}},
		{[]string{"walkie", "status", "--json", "d.walkie.md"}, []string{"walkie", "status", "--json", "--", "d.walkie.md"}},
		{[]string{"walkie", "status", "--json", "--config", "w.yaml", "d.walkie.md"}, []string{"walkie", "status", "--json", "--config", "w.yaml", "--", "d.walkie.md"}},
		{[]string{"walkie", "status", "--json=id", "d.walkie.md"}, []string{"walkie", "status", "--json=id", "--", "d.walkie.md"}},
	} {
		if got := interspersed(app, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzFieldsValue: whatever --json is given, its names are trimmed, none
// empty, none holding a comma, and taking an argument means it reads as
// a field list.
func FuzzFieldsValue(f *testing.F) {
	for _, s := range []string{"", "true", "a,b", " a , b ", ",,", "a,,b", "d.walkie.md", "x\x00y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := &fieldsValue{avail: []string{"a", "b"}}
		if err := v.Set(s); err != nil {
			t.Fatal(err)
		}
		for _, n := range v.names {
			if n == "" || strings.Contains(n, ",") || strings.TrimSpace(n) != n {
				t.Fatalf("Set(%q) gave the name %q", s, n)
			}
		}
		if v.takes(s) && !fieldList.MatchString(s) {
			t.Fatalf("took %q, which is no field list", s)
		}
	})
}
