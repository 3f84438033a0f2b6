package main

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/charts"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/controller/trials"
	"github.com/walkie-sh/walkie/walkie"
)

// termCharts is how a chart draws on standard output: Unicode bars on a
// terminal, coloured as --color and NO_COLOR allow, within its width (80
// columns at most); plain ASCII text in a pipe.
func termCharts(s *IOStreams) charts.TermOptions {
	return charts.TermOptions{Width: s.OutWidth(), Colour: s.OutPalette().On, Unicode: s.IsStdoutTTY()}
}

// writeHistograms prints the trials' histograms under the summary, in a
// fenced block, so the output stays markdown that renders.
func writeHistograms(s *IOStreams, sum *trials.Summary) error {
	if _, err := fmt.Fprint(s.Out, "\n## Distribution\n\n```text\n"); err != nil {
		return err
	}
	if err := charts.NewDistribution(sum).Text(s.Out, termCharts(s)); err != nil {
		return err
	}
	_, err := fmt.Fprint(s.Out, "```\n")
	return err
}

// writeSVGFile writes the SVG draw makes to path, whole or not at all.
func writeSVGFile(path string, draw func(io.Writer) error) error {
	var b bytes.Buffer
	if err := draw(&b); err != nil {
		return err
	}
	if err := walkie.WriteFileAtomic(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--svg %s: %w", path, err)
	}
	return nil
}

// writeReportSVG draws walkie report --svg's picture of the debate at
// file into path.
func writeReportSVG(path, file string, r *roundtable.Report, s *controller.Standing) error {
	d, err := walkie.Load(file)
	if err != nil {
		return err
	}
	recs, err := controller.ReadTurnLog(walkie.StateDir(file, d.Meta.ID))
	if err != nil {
		return err
	}
	return writeSVGFile(path, func(w io.Writer) error { return charts.Report(w, r, s, d, recs, time.Now()) })
}
