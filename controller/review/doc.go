// Package review is walkie's CI form: it builds a debate without a person
// from a design document that a change adds or edits, runs it to the end
// with the controller, and reports the outcome.
//
// For each document it makes a copy of the repository at the head commit,
// writes the debate's record at the top of that copy with a briefing
// generated from the document, its diff from the base and the pull
// request's title and description, pins the briefing and records in the
// record itself that CI approved it, then runs controller.Run. The report
// (markdown and JSON) says whether the reviewers agreed, disagreed, or
// could not finish (and why: a failing model is never a rejection), each
// party's final position, the objections that stand with the document line
// each cites, the rounds, the cost per agent and the record's chain hash.
//
// Publishing the report where a CI shows it (a GitHub step summary,
// outputs, annotations, a pull-request comment) is the publish
// sub-package's job; this one only writes files.
package review
