// Package plan loads and validates wsplan plan files.
//
// Data flow: Load reads the YAML, resolves `vars:` (overridden by --set) into
// `${name}` references, strictly decodes every section (unknown keys are
// errors), applies defaults in one place, validates everything, and returns
// either a Plan ready to run or every problem at once, each naming
// file:line and the field. Nothing is started here; assertion expressions
// are compiled by package assert.
//
// # Keys
//
// A plan file is decoded straight into Plan and the types it holds: each
// key is one field, declared once with its yaml, doc, default, min, max
// and required tags (plan.go), which the loader, the JSON Schema (package
// schema) and TestSyntaxTags read. Adding a key is adding its field, plus
// its check (check.go) when it has one; a default is a Default* constant
// applied in setDefaults (defaults.go). Keys written in another form than
// the engine reads (client.shards: auto, command: as one string, tls: and
// compression: as a switch or a mapping, url: beside urls:) have a type of
// their own with UnmarshalYAML and JSONSchema (keys.go, targets.go), which
// Load resolves into the engine's fields (resolveTargets). vars:, phases:
// and matrix: are read from their nodes (ownKeys).
//
// Files: load.go (the order of a load), decode.go (the strict decoder),
// vars.go, phases.go, check.go and targets.go, remote.go (the sections'
// checks), matrix.go, defaults.go, errors.go.
//
// # Errors
//
// Every problem is an *Error printed as
//
//	plans/x.yaml:12: phases[1].echo.payload: must be > 0, got -5
//
// Field paths start at the top of the document: mapping keys are joined
// with ".", list items are [i] (from 0), keys that are not plain words are
// quoted (host.sysctl["net.core.somaxconn"]). A problem with a key itself
// (unknown, written twice) names the mapping it is in. Problems that
// belong to no line (a --set or --only flag, a missing section) leave the
// line out: "plans/x.yaml: --only: unknown server …". Load returns them
// all, ordered by line, as Errors.
//
// # Strictness
//
// Unknown keys are errors everywhere, with the closest known key suggested.
// yaml.v3's KnownFields only works on a yaml.Decoder, and Node.Decode stops
// at the first error, so the loader walks the yaml.Node tree itself (see
// decode.go): each mapping's keys are checked against the target struct's
// yaml tags, each leaf is decoded on its own, and the line of every key is
// recorded so later validation can name it. Wrong types, 1.5 for an
// integer, and a key written twice are errors. Anchors, aliases and merge
// keys (<<) work; merged keys are checked like written ones.
//
// # Phases
//
// Each item of `phases:` is a mapping with one key, the kind
// (scenarios.Lookup). Its body is decoded strictly into the kind's config
// struct; a `name:` key in the body names the phase and is removed first.
// Then scenarios.Defaults (the kind's tag defaults, then its context
// defaults) and scenarios.Check (tag bounds, then the kind's Validate) run
// with a scenarios.Context: Conns is the sum of the connections earlier
// phases open (scenarios.Opener). Problems are reported at the line of the
// field they name (or of the phase).
//
// # Variables
//
// See vars.go: `${name}` in any scalar value; an unquoted scalar that is
// exactly one reference keeps the variable's YAML type, anything else is
// text; --set VAR=VALUE overrides a declared variable; a variable may use
// variables declared above it.
package plan
