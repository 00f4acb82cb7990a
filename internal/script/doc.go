// Package script is a scripted conversation over one WebSocket connection:
// the document a plan's `script` phase holds, and what the client runs of
// it.
//
// A script is a list of steps — send a message from a template, expect a
// message that matches (a JSON field, an expr over the decoded JSON, a
// regular expression, a byte prefix), think, loop, close — run by every
// user (one connection each). The document types (Step, Send, Expect,
// Match, Think, Loop, Close, Data) are decoded once from YAML by the plan
// loader and cross to shard processes as JSON; Compile turns a document
// into a Program whose templates render into a send buffer without
// allocating (Template.Append), whose JSON paths read a message in place
// (Path, on tidwall/gjson) and whose matchers test a message without
// decoding it (Matcher), except for expr conditions, which decode the
// message's JSON.
//
// Data flow: scenarios/script.go declares the phase (its YAML keys embed
// these types) and calls Compile at load, so that a broken template, an
// unknown field, a capture read before any step sets it, a correlate path
// the send never writes or a malformed regular expression is a plan error
// with its file and line; internal/client compiles the same document again
// in each process that runs it and walks the Program on its event loops.
//
// The package imports nothing of the module (internal/client's leaves,
// see internal/layering), but internal/units for durations.
package script
