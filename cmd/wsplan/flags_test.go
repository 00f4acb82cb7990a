package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/sysctl"
)

// flagCase is one command of TestBadFlagsTouchNothing: args that reach
// the host (good), and bad flags appended to them, each with what stderr
// must say.
type flagCase struct {
	name string
	good []string
	bad  []badFlag
}

// badFlag is a flag (or flags) appended to a command's good args, and
// the message it must exit 2 with.
type badFlag struct {
	args []string
	want string
}

// flagFixtures are the files the commands read, in a fresh directory.
func flagFixtures(t *testing.T, dir string) {
	t.Helper()
	server := "servers:\n  - name: s\n    command: [sh, -c, \"touch started; exec sleep 30\"]\n    addrs: [\"127.0.0.1:1\"]\n"
	files := map[string]string{
		"plan.yaml":               "host: {sysctl: {net.core.somaxconn: 4096}}\n" + server + "phases:\n  - connect: {connections: 1}\n",
		"kube.yaml":               "client: {kubernetes: {}}\n" + server + "phases:\n  - connect: {connections: 1}\n",
		"m.yaml":                  "vars: {n: 1}\nmatrix: {n: [1, 2]}\n" + server + "phases:\n  - connect: {connections: ${n}}\n",
		"proc/net/core/somaxconn": "128\n",
		"afile":                   "",
		"adir/keep":               "",
	}
	ar, err := txtar.ParseFile("testdata/script/report.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == "r.json" {
			files["r.json"] = string(f.Data)
		}
	}
	har, err := os.ReadFile("testdata/har/chromium.har")
	if err != nil {
		t.Fatal(err)
	}
	files["rec.har"] = string(har)
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := (sysctl.Saved{Sysctl: map[string]string{"net.core.somaxconn": "64"}}).WriteFile(filepath.Join(dir, "saved.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := shard.NewCerts(filepath.Join(dir, "certs")); err != nil {
		t.Fatal(err)
	}
}

// planFlagsBad are the bad values of the flags every plan-loading command
// shares (planFlags).
var planFlagsBad = []badFlag{
	{[]string{"--set", "conns"}, `--set "conns": want VAR=VALUE`},
	{[]string{"--set", "=1"}, `--set "=1": want VAR=VALUE`},
	{[]string{"--only-matrix", "n"}, `--only-matrix "n": want VAR=VALUE`},
	{[]string{"--only", "nosuch"}, `--only: unknown server "nosuch"`},
	{[]string{"--set", "nosuch=1"}, `--set: unknown variable "nosuch"`},
	{[]string{"--only-matrix", "nosuch=1"}, `--only-matrix: unknown matrix variable "nosuch"`},
}

// flagCases are every command with a flag, each bad value of each flag:
// one table, as long as its rows (a row a flag value, no logic).
func flagCases() []flagCase {
	run := []badFlag{
		{[]string{"--count", "0"}, `--count 0: want 1 to 1000`},
		{[]string{"--count", "-1"}, `--count -1: want 1 to 1000`},
		{[]string{"--count", "1001"}, `--count 1001: want 1 to 1000`},
		{[]string{"--count", "x"}, `invalid argument "x" for "--count"`},
		{[]string{"--format", "html"}, `--format "html": want md or ascii`},
		{[]string{"--progress", "maybe"}, `--progress "maybe": want auto, on or off`},
		{[]string{"--metrics-interval", "-5s"}, `--metrics-interval -5s: want >= 100ms`},
		{[]string{"--metrics-interval", "0"}, `--metrics-interval 0s: want >= 100ms`},
		{[]string{"--metrics-interval", "NaN"}, `invalid argument "NaN" for "--metrics-interval"`},
		{[]string{"--metrics-listen", "nowhere"}, `--metrics-listen "nowhere": want HOST:PORT`},
		{[]string{"--metrics-listen", "127.0.0.1:65536"}, `--metrics-listen "127.0.0.1:65536": want HOST:PORT`},
		{[]string{"--metrics-listen", "bad host!:9464"}, `--metrics-listen "bad host!:9464": want HOST:PORT`},
		{[]string{"--metrics-push", "ftp://127.0.0.1/"}, `want an http:// or https:// URL`},
		{[]string{"--metrics-push", "http://127.0.0.1:99999/api/v1/write"}, `port 99999: want 1 to 65535`},
		{[]string{"--metrics-push", "http:///v1/metrics"}, `want an http:// or https:// URL`},
		{[]string{"--json", "no/such/r.json"}, `--json no/such/r.json: no directory no/such to write it in`},
		{[]string{"--junit", "adir"}, `--junit adir: a directory, want a file`},
		{[]string{"--summary", "afile/s.md"}, `--summary afile/s.md: no directory afile to write it in`},
		{[]string{"--html", "no/such/r.html"}, `--html no/such/r.html: no directory`},
		{[]string{"--benchfmt", "no/such/b.txt"}, `--benchfmt no/such/b.txt: no directory`},
		{[]string{"--out", "afile"}, `--out afile: not a directory`},
		{[]string{"--baseline", "missing.json"}, `--baseline: `},
		{[]string{"--tune=maybe"}, `invalid argument "maybe" for "--tune"`},
	}
	run = append(run, planFlagsBad...)
	return []flagCase{
		{"run", []string{"run", "plan.yaml", "--out", "out", "--progress", "off", "--tune"}, run},
		// The kubernetes shards are deployed after every flag is checked.
		{"run kubernetes", []string{"run", "kube.yaml", "--out", "out"}, run[:15]},
		{"validate", []string{"validate", "m.yaml"}, append([]badFlag{
			{[]string{"--only-matrix", "n=7"}, `--only-matrix: n=7: not in the matrix (1, 2)`},
		}, planFlagsBad...)},
		{"tune --apply", []string{"tune", "plan.yaml", "--apply", "--save", "s.json"}, append([]badFlag{
			{[]string{"--check"}, `want: tune PLAN --check, tune PLAN --apply, or tune --restore FILE`},
			{[]string{"--save", ""}, `--save: want a file name`},
			{[]string{"--save", "adir"}, `--save adir: a directory, want a file`},
			{[]string{"--save", "no/such/s.json"}, `--save no/such/s.json: no directory no/such to write it in`},
			{[]string{"--restore", "saved.json"}, `--restore FILE takes no plan and no --check/--apply`},
		}, planFlagsBad...)},
		{"tune --restore", []string{"tune", "--restore", "saved.json"}, []badFlag{
			{[]string{"--restore", "afile"}, `afile`},
			{[]string{"--restore", "missing.json"}, `missing.json`},
		}},
		{"serve", []string{"serve", "--framework", "gorilla", "--addrs", "127.0.0.1:9"}, []badFlag{
			{[]string{"--framework", "nosuch"}, `nosuch`},
			{[]string{"--addrs", "127.0.0.1"}, `--addrs: `},
			{[]string{"--addrs", "127.0.0.1:9001-9000"}, `--addrs: `},
			{[]string{"--payload", "0"}, `--payload 0: want a size in bytes >= 1`},
			{[]string{"--payload", "-1"}, `--payload -1: want a size in bytes >= 1`},
			{[]string{"--path", "ws"}, `--path "ws": want a path that starts with /`},
			{[]string{"--opt", "noequals"}, `--opt "noequals": want KEY=VALUE`},
			{[]string{"--opt", "nosuch=1"}, `nosuch`},
			{[]string{"--tls-cert", "certs/ca.pem"}, `--tls-cert and --tls-key go together`},
			{[]string{"--tls-cert", "afile", "--tls-key", "afile"}, `--tls-cert/--tls-key: `},
		}},
		{"shard", []string{"shard", "--targets", "127.0.0.1:1", "--loops", "1"}, []badFlag{
			{[]string{"--targets", ""}, `shard needs --targets ADDRS`},
			{[]string{"--targets", "127.0.0.1"}, `--targets: "127.0.0.1": want HOST:PORT`},
			{[]string{"--loops", "-1"}, `--loops -1: want >= 0`},
			{[]string{"--loops", "0"}, `--loops 0: want >= 1 for a local shard`},
			{[]string{"--source", "10.0.0.300"}, `--source: "10.0.0.300": want an IP address`},
			{[]string{"--path", "ws"}, `--path "ws": want a path that starts with /`},
			{[]string{"--certs", "certs"}, `--certs goes with --listen`},
			{[]string{"--idle-exit", "1s"}, `--idle-exit goes with --listen`},
		}},
		{"shard --listen", []string{"shard", "--listen", "127.0.0.1:0", "--certs", "certs"}, []badFlag{
			{[]string{"--listen", "nowhere"}, `--listen "nowhere": want HOST:PORT`},
			{[]string{"--listen", ":70000"}, `--listen ":70000": want HOST:PORT`},
			{[]string{"--certs", ""}, `shard --listen needs --certs DIR`},
			{[]string{"--certs", "adir"}, `--certs: `},
			{[]string{"--targets", "127.0.0.1:1"}, `--targets is a local shard's`},
			{[]string{"--loops", "-2"}, `--loops -2: want >= 0`},
			{[]string{"--idle-exit", "soon"}, `invalid argument "soon" for "--idle-exit"`},
		}},
		{"kube manifest", []string{"kube", "manifest", "plan.yaml", "--certs", "kcerts"}, append([]badFlag{
			{[]string{"--shards", "0"}, `--shards 0: want >= 1`},
			{[]string{"--shards", "-3"}, `--shards -3: want >= 1`},
			{[]string{"--run-id", "Bad_ID"}, `--run-id: run id "Bad_ID": want 1 to 40 lower-case letters`},
			{[]string{"--run-id", strings.Repeat("a", 41)}, `--run-id: run id`},
			{[]string{"--certs", "afile"}, `--certs afile: not a directory`},
		}, planFlagsBad...)},
		{"init", []string{"init", "new.yaml", "--url", "ws://127.0.0.1:7000/ws"}, []badFlag{
			{[]string{"--conns", "0"}, `--conns 0: want 1 to`},
			{[]string{"--conns", "-1"}, `conns`},
			{[]string{"--protocol", "nosuch"}, `nosuch`},
			{[]string{"--url", "http://x/"}, `http://x/`},
			{[]string{"--url", "", "--preset", "nosuch"}, `nosuch`},
		}},
		{"import har", []string{"import", "har", "rec.har", "-o", "imported.yaml"}, []badFlag{
			{[]string{"--users", "0"}, `--users: must be >= 1, got 0`},
			{[]string{"--url", "http://x/"}, `--url "http://x/": want a ws:// or wss:// URL`},
			{[]string{"-o", "no/such/p.yaml"}, `--output no/such/p.yaml: no directory`},
			{[]string{"-o", "adir"}, `--output adir: a directory, want a file`},
		}},
		{"report", []string{"report", "r.json", "--html", "r.html"}, []badFlag{
			{[]string{"--html", "no/such/r.html"}, `--html no/such/r.html: no directory`},
			{[]string{"--summary", "adir"}, `--summary adir: a directory, want a file`},
			{[]string{"--benchfmt", "afile/b.txt"}, `--benchfmt afile/b.txt: no directory`},
		}},
		{"compare", []string{"compare", "r.json", "r.json"}, []badFlag{
			{[]string{"--format", "csv"}, `--format "csv": want md or ascii`},
		}},
	}
}

// TestBadFlagsTouchNothing runs every command through Main with each bad
// value of each of its flags: exit 2, the flag named, and nothing done to
// the host: touchHost (called before a command binds, pushes, deploys,
// writes a sysctl, starts a server or shard, or writes a file) was never
// reached, the fake /proc/sys is as it was, the plan's server never ran
// and no file appeared. The happy half: the same command with its good
// flags reaches touchHost (which stops it there).
func TestBadFlagsTouchNothing(t *testing.T) {
	dir := t.TempDir()
	flagFixtures(t, dir)
	t.Chdir(dir)
	t.Setenv(EnvProcSysRoot, filepath.Join(dir, "proc"))
	t.Setenv(EnvSysRoot, filepath.Join(dir, "nosys"))
	var touched []string
	was := touchHost
	t.Cleanup(func() { touchHost = was })
	touchHost = func(what string) error {
		touched = append(touched, what)
		return errors.New("test: stopped before " + what)
	}
	before := listFiles(t, dir)
	for _, c := range flagCases() {
		t.Run(c.name, func(t *testing.T) {
			touched = nil
			var stderr strings.Builder
			code := Main(c.good, io.Discard, &stderr)
			if len(touched) == 0 && c.name != "validate" && c.name != "compare" {
				t.Errorf("good flags %q: exit %d, never reached the host:\n%s", c.good, code, stderr.String())
			}
			if c.name == "validate" && code != ExitOK {
				t.Errorf("good flags %q: exit %d:\n%s", c.good, code, stderr.String())
			}
			for _, b := range c.bad {
				touched = nil
				stderr.Reset()
				args := append(slices.Clone(c.good), b.args...)
				code := Main(args, io.Discard, &stderr)
				if code != ExitUsage || !strings.Contains(stderr.String(), b.want) {
					t.Errorf("wsplan %s: exit %d, stderr:\n%s\nwant exit %d saying %q", strings.Join(args, " "), code, stderr.String(), ExitUsage, b.want)
				}
				if len(touched) > 0 {
					t.Errorf("wsplan %s: touched the host: %s", strings.Join(args, " "), strings.Join(touched, ", "))
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "proc/net/core/somaxconn")); err != nil || string(b) != "128\n" {
		t.Errorf("fake somaxconn = %q, %v: a sysctl was written", b, err)
	}
	if after := listFiles(t, dir); !slices.Equal(before, after) {
		t.Errorf("files before: %q\nafter: %q", before, after)
	}
}

// listFiles lists every file and directory under dir.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		out = append(out, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFlagSecrets: a --metrics-push URL's credentials (its user-info
// password, an access_token) are masked like a plan's: the error about
// the flag names it and shows *** where they were.
func TestFlagSecrets(t *testing.T) {
	dir := t.TempDir()
	flagFixtures(t, dir)
	t.Chdir(dir)
	const pass, token = "flag.P4ss.w0rd", "flag.T0k3n.x9"
	for _, u := range []string{
		"ftp://bench:" + pass + "@127.0.0.1/?access_token=" + token,
		"http://bench:" + pass + "@127.0.0.1:99999/api/v1/write?access_token=" + token,
	} {
		var stderr strings.Builder
		code := Main([]string{"run", "plan.yaml", "--metrics-push", u}, io.Discard, &stderr)
		if code != ExitUsage || !strings.Contains(stderr.String(), "--metrics-push: metrics push \"") || !strings.Contains(stderr.String(), "bench:***@127.0.0.1") {
			t.Errorf("%s: exit %d, stderr %q: want exit 2 naming the flag, *** for the password", u, code, stderr.String())
		}
		for _, s := range []string{pass, token} {
			if strings.Contains(stderr.String(), s) {
				t.Errorf("%s: stderr shows %q: %s", u, s, stderr.String())
			}
		}
	}
}
