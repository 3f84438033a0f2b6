// Package doctor checks each configured agent without spending tokens: is
// its CLI there in the PATH its sessions get, which version, does it look
// logged in (its environment, its credential files, and claude's own
// `auth status`), and does its configuration hold. Every probe is a session
// built and run by the engine, like a turn.
package doctor
