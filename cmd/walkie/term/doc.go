// Package term is how walkie writes for a person at a terminal: the
// palette (colour only where it is wanted), markdown rendered for the
// terminal, a record shown entry by entry, the live display of running
// sessions and the progress lines that stand for it off a terminal, and
// the end-of-run summary. Everything it writes that came from outside
// walkie (an agent's text, a reason, a model name, a file name) goes
// through Clean, so that no such text can drive the terminal.
//
// It renders what it is given: where a debate stands is
// controller.Standing, the records it shows are read by the caller.
package term
