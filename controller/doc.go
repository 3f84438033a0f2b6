// Package controller runs debates: it decides who is next, runs that
// agent's session, judges the turn it left in the file, records the
// attempt, and applies the policy (caps, retries, halt, budget) until the
// debate ends. Each step is level-based: it reads the record and the state
// from disk, decides one action and takes it, so a restart or a missed
// event changes nothing.
package controller
