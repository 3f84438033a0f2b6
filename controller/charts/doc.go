// Package charts draws how debates, round tables and trials went, for
// people who would rather look than read: a debate's timeline (one strip
// per party, each attempt a bar coloured by its outcome, sign-offs,
// halts, round boundaries and the cost climbing toward the budget), a
// round table's verdicts against its grader, the quorum lever's replay,
// and the distribution of a set of trials.
//
// Each chart is data first (built from a report, a trials summary, the
// turn log and what controller.Standing says), then drawn: as SVG for the
// fleet page and the --svg files, and, for what a terminal shows, as text
// that fits its width. A chart works out no figure of the debate's
// standing itself: the status, round cap, cost and budget are the
// standing's (Head).
//
// The SVG is written by hand through encoding/xml rather than by a
// plotting library: every text an agent wrote (names, reasons, details)
// goes through the encoder's escaping; colours are presentation
// attributes, never style attributes, so the daemon's
// Content-Security-Policy (style-src 'self') lets the charts inline in its
// page keep their colours; and coordinates are whole tenths computed in
// integers from milliseconds and micro-dollars, so the same data gives the
// same bytes on every machine.
package charts
