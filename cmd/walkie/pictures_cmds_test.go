package main

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/walkie-sh/walkie/controller/charts/chartstest"
)

func TestPictureFlagsParse(t *testing.T) {
	if o := parse(t, reportCommand, "x.walkie.md", "--svg", "x.svg"); o.SVG != "x.svg" {
		t.Errorf("report --svg: %+v", o)
	}
	if o := parse(t, trialsReportCommand, "eval.trials", "--svg", "d.svg"); o.SVG != "d.svg" || o.Dir != "eval.trials" {
		t.Errorf("trials report --svg: %+v", o)
	}
}

// svgClasses parses an SVG file strictly and lists the class of every
// svg element in it.
func svgClasses(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var out []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s does not parse: %v", path, err)
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "svg" {
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					out = append(out, a.Value)
				}
			}
		}
	}
}

// walkie trials report draws the distribution under its tables: ASCII
// text in a pipe, Unicode bars in colour on a terminal, without colour
// under NO_COLOR; --svg writes the same charts into a file.
func TestTrialsReportDrawsTheDistribution(t *testing.T) {
	ctx := context.Background()
	dir := chartstest.Trials(t, t.TempDir())
	svg := filepath.Join(t.TempDir(), "dist.svg")
	f := fakeFactory("")
	out, errOut, code := f.run(t, func() error {
		return trialsReportRun(ctx, &trialsReportOptions{IO: f.IO, Dir: dir, Format: "markdown", SVG: svg})
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"# Trials of eval: 5 copies\n", "\n## Distribution\n\n```text\nOutcomes, of 5 trials\n",
		"  converged   ####", "  1 round   ####", "# converged  = max-rounds  - halted\n```\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("in a pipe the report lacks %q:\n%s", want, out)
		}
	}
	_, chart, _ := strings.Cut(out, "## Distribution")
	for _, r := range chart {
		if r >= utf8.RuneSelf || r == 0x1b {
			t.Fatalf("in a pipe the chart holds %q:\n%s", r, chart)
		}
	}
	if got := svgClasses(t, svg); len(got) != 1 || got[0] != "chart distribution" {
		t.Errorf("the SVG file holds %q", got)
	}

	f.IO.SetStdoutTTY(true)
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	out, _, _ = f.run(t, func() error {
		return trialsReportRun(ctx, &trialsReportOptions{IO: f.IO, Dir: dir, Format: "markdown"})
	})
	if !strings.Contains(out, "\x1b[32m█") {
		t.Errorf("on a terminal the bars are not coloured:\n%q", out)
	}
	t.Setenv("NO_COLOR", "1")
	out, _, _ = f.run(t, func() error {
		return trialsReportRun(ctx, &trialsReportOptions{IO: f.IO, Dir: dir, Format: "markdown"})
	})
	if strings.Contains(out, "\x1b") || !strings.Contains(out, "  converged   ███") || !strings.Contains(out, "▓") {
		t.Errorf("under NO_COLOR the bars are not plain Unicode:\n%q", out)
	}
	_, chart, _ = strings.Cut(out, "## Distribution")
	for _, line := range strings.Split(chart, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
}

// walkie report --svg draws a round table's timeline, grid and replay
// into the file, and prints the report as without it; a file that cannot
// be written is an error, and neither the file nor the report is left
// half-written.
func TestReportSVG(t *testing.T) {
	ctx := context.Background()
	file := chartstest.RoundTable(t, t.TempDir())
	svg := filepath.Join(t.TempDir(), "rt.svg")
	f := fakeFactory("")
	plain, _, _ := f.run(t, func() error {
		return reportRun(ctx, &reportOptions{IO: f.IO, Config: f.Config, File: file, Format: "markdown"})
	})
	out, errOut, code := f.run(t, func() error {
		return reportRun(ctx, &reportOptions{IO: f.IO, Config: f.Config, File: file, Format: "markdown", SVG: svg})
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != plain {
		t.Errorf("--svg changed the report:\n%s\nwant\n%s", out, plain)
	}
	if got, want := strings.Join(svgClasses(t, svg), ","), "chart stack,chart timeline,chart agreement,chart quorum"; got != want {
		t.Errorf("the SVG holds %s, want %s", got, want)
	}
	blocker := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(blocker, "x.svg") // under a file: no directory can be made there
	out, errOut, code = f.run(t, func() error {
		return reportRun(ctx, &reportOptions{IO: f.IO, Config: f.Config, File: file, Format: "markdown", SVG: bad})
	})
	if code == 0 || out != "" {
		t.Errorf("--svg under a file: exit %d, printed %q", code, out)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a file was left where it could not be written")
	}
}
