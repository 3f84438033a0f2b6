// Package walkie owns the record: the walkie file's format, its
// tamper-evident chain, the enforced writer, turn order and convergence,
// and the state record and doorbell kept beside it.
package walkie
