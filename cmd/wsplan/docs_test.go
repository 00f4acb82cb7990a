package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/wsplan/wsplan/docs"
)

// mentionRE finds a wsplan command line in code: `wsplan run PLAN --json
// F`, `go run ./cmd/wsplan validate …`, up to a shell separator.
var mentionRE = regexp.MustCompile(`(?:^|[\s$&;(])(?:go run \./cmd/wsplan|wsplan)[ \t]+([^|;&#\n]*)`)

// outputRE is a command line in a block of output: at the start of a
// line, after a prompt or not (prose in the output is no command).
var outputRE = regexp.MustCompile(`^\s*(?:\$ )?(?:go run \./cmd/wsplan|wsplan)[ \t]+([^|;&#\n]*)`)

// commandLines are the wsplan command lines of a page's code: inline
// code spans and the lines of its shell and text blocks.
func commandLines(page, text string) []docs.Link {
	var out []docs.Link
	add := func(re *regexp.Regexp, line int, code string) {
		for _, m := range re.FindAllStringSubmatch(code, -1) {
			out = append(out, docs.Link{Line: line, Target: strings.TrimSpace(m[1])})
		}
	}
	for _, s := range docs.CodeSpans(text) {
		add(mentionRE, s.Line, s.Target)
	}
	for _, b := range docs.Blocks(page, text) {
		re := mentionRE
		switch b.Lang {
		case "sh", "bash":
		case "console", "text", "":
			re = outputRE
		default:
			continue
		}
		for i, l := range strings.Split(b.Body, "\n") {
			add(re, b.Line+1+i, l)
		}
	}
	return out
}

// checkCommand says what in a command line (after `wsplan`) the command
// tree does not have: a command, a subcommand or a flag. Words that are
// not commands (PLAN, FILE, values) are arguments.
func checkCommand(root *cobra.Command, line string) string {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return ""
	}
	first := strings.TrimRight(fields[0], ":,.)")
	if !regexp.MustCompile(`^(-|[a-z][a-z-]*$)`).MatchString(first) {
		return "" // not a command: output such as "wsplan (devel) …"
	}
	cmd := root
	i := 0
	for ; i < len(fields); i++ {
		w := strings.TrimRight(fields[i], ":,.)`")
		if strings.HasPrefix(w, "-") {
			break
		}
		sub := find(cmd, w)
		if sub == nil {
			if cmd == root {
				return "no command " + w
			}
			break // an argument
		}
		cmd = sub
	}
	for ; i < len(fields); i++ {
		for _, f := range strings.FieldsFunc(fields[i], func(r rune) bool { return r == '|' || r == '\\' }) {
			f = strings.Trim(f, "[]().,`…'\"")
			if !strings.HasPrefix(f, "-") || f == "-" || f == "--" {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
			if name == "" || !regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(name) {
				continue
			}
			if !hasFlag(cmd, name, !strings.HasPrefix(f, "--")) {
				return "wsplan " + cmd.CommandPath() + ": no flag " + f
			}
		}
	}
	return ""
}

func find(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	if name == "help" && cmd.Root() == cmd {
		return newHelpCmd(io.Discard)
	}
	return nil
}

func hasFlag(cmd *cobra.Command, name string, short bool) bool {
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	if short {
		return len(name) == 1 && (cmd.Flags().ShorthandLookup(name) != nil || cmd.InheritedFlags().ShorthandLookup(name) != nil)
	}
	return cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil || cmd.PersistentFlags().Lookup(name) != nil
}

// TestDocCommands: every `wsplan COMMAND [--flag]` that README.md and
// docs/ show in code exists in the command tree, flags included.
func TestDocCommands(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	root.SetHelpCommand(newHelpCmd(io.Discard))
	pages, err := docs.ReadPages("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p, text := range pages {
		for _, l := range commandLines(p, text) {
			n++
			if msg := checkCommand(root, l.Target); msg != "" {
				t.Errorf("%s:%d: wsplan %s: %s", p, l.Line, l.Target, msg)
			}
		}
	}
	if n < 50 {
		t.Errorf("found %d wsplan command lines in the docs, want at least 50", n)
	}
}

// TestCheckCommandSad: what the check must catch, and what it must let be.
func TestCheckCommandSad(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	for line, want := range map[string]string{
		"run plans/ci.yaml --json r.json --set conns=2":       "",
		"run PLAN [--set VAR=VALUE]... [--format md\\|ascii]": "",
		"tune PLAN --check\\|--apply [--save FILE]":           "",
		"import har FILE [-o PLAN]":                           "",
		"--version":                                           "",
		"(devel) 3f2a1c9d0e1f":                                "",
		"runn plans/ci.yaml":                                  "no command runn",
		"run plans/ci.yaml --jsonn r.json":                    "no flag --jsonn",
		"shard certs DIR --listen :7070":                      "no flag --listen",
		"import har FILE -x":                                  "no flag -x",
	} {
		got := checkCommand(root, line)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("checkCommand(%q) = %q, want %q", line, got, want)
		}
	}
	spans := commandLines("x.md", "see `wsplan validate p.yaml` and\n```sh\ngo run ./cmd/wsplan run p.yaml --tune # a comment --nope\n```\n")
	if len(spans) != 2 || spans[0].Target != "validate p.yaml" || spans[1].Target != "run p.yaml --tune" {
		t.Errorf("commandLines = %+v", spans)
	}
}

// TestHelpTopics: `wsplan help TOPIC` prints the page as it is on disk;
// `wsplan help` lists every topic after the commands; a command's name
// stays its help, the page then by its path; an unknown topic is exit 2.
func TestHelpTopics(t *testing.T) {
	run := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := Main(args, &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	out, _, code := run("help")
	if code != 0 || !strings.Contains(out, "Available Commands:") {
		t.Fatalf("wsplan help: exit %d\n%s", code, out)
	}
	for _, tp := range docs.Topics() {
		if !strings.Contains(out, "  "+tp.Name+" ") {
			t.Errorf("wsplan help does not list topic %s", tp.Name)
		}
	}
	for arg, page := range map[string]string{
		"plans": "plans.md", "echo": "kinds/echo.md", "kinds/echo": "kinds/echo.md",
		"mqtt": "protocols/mqtt.md", "init.md": "init.md", "docs/ci.md": "ci.md",
	} {
		want, err := docs.ReadPage("../..", "docs/"+page)
		if err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := run("help", arg); code != 0 || out != want {
			t.Errorf("wsplan help %s: exit %d, %d bytes, want docs/%s (%d bytes)\n%s", arg, code, len(out), page, len(want), errOut)
		}
	}
	out, _, code = run("help", "init")
	if code != 0 || !strings.Contains(out, "--url") || !strings.Contains(out, "wsplan help init.md") {
		t.Errorf("wsplan help init: exit %d, want init's usage and the page's name\n%s", code, out)
	}
	out, _, code = run("help", "run")
	if code != 0 || !strings.Contains(out, "--json") {
		t.Errorf("wsplan help run: exit %d, want run's usage\n%s", code, out)
	}
	if _, errOut, code := run("help", "nope"); code != ExitUsage || !strings.Contains(errOut, `unknown help topic "nope"`) {
		t.Errorf("wsplan help nope: exit %d, %q", code, errOut)
	}
}
