package briefing

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, Diff("golden", "got", want, []byte(got)))
	}
}

func TestTemplateGolden(t *testing.T) {
	golden(t, "template.golden", Template())
}

func TestTemplateHasEverySectionUnfilled(t *testing.T) {
	r := Check([]byte(Template()))
	if len(r.Missing) != 0 || len(r.Empty) != 0 {
		t.Fatalf("template misses sections: %+v", r)
	}
	if len(r.Unfilled) != len(Sections) {
		t.Fatalf("every section of the template should read as unfilled, got %v", r.Unfilled)
	}
	if r.OK() {
		t.Fatal("the bare template passed the check")
	}
	for _, s := range Sections {
		if !strings.Contains(Template(), "## "+s.Title+"\n_"+s.Guidance+"_\n") {
			t.Errorf("section %q is not a heading with one line of guidance", s.Title)
		}
	}
}

func TestDistillPromptGolden(t *testing.T) {
	golden(t, "distill-prompt.golden", DistillPrompt(PromptData{Chat: "/d/.walkie/x/distill/chat.txt", Out: "/d/.walkie/x/distill/briefing-1.md"}))
	golden(t, "distill-prompt-retry.golden", DistillPrompt(PromptData{Chat: "/d/chat.txt", Out: "/d/briefing-2.md",
		Retry: "missing sections: Options; 120 words, far below the 300-400 aimed at"}))
}

func TestIsPlaceholder(t *testing.T) {
	for text, want := range map[string]bool{
		"":                       true,
		"  \n":                   true,
		Template():               true,
		"\n" + Template() + "\n": true,
		"(Write the briefing here: `walkie brief draft FILE` gives a template.)\n": true,
		"## Question\nHow should we paginate?\n":                                   false,
		"(Write the briefing here)\nand more\n":                                    false,
	} {
		if got := IsPlaceholder([]byte(text)); got != want {
			t.Errorf("IsPlaceholder(%q) = %v, want %v", text, got, want)
		}
	}
}
