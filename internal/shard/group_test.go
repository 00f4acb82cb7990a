package shard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/secret"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// failEnv makes a test shard started with --source answer every run with
// an error and a partial result (see fakeShard).
const failEnv = "WSPLAN_TEST_SHARD_FAIL"

// TestMain lets this test binary be its own shard: Group starts
// `<exe> shard --targets ...`, which lands here.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "shard" {
		os.Exit(shardMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// shardMain is `wsplan shard` for tests.
func shardMain(args []string) int {
	fs := flag.NewFlagSet("shard", flag.ContinueOnError)
	targets := fs.String("targets", "", "")
	source := fs.String("source", "", "")
	opts := client.Options{}
	fs.StringVar(&opts.Path, "path", "/ws", "")
	fs.IntVar(&opts.Loops, "loops", 1, "")
	fs.BoolVar(&opts.NoDelay, "nodelay", true, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts.Targets = strings.Split(*targets, ",")
	if *source != "" && os.Getenv(failEnv) != "" {
		fakeShard()
		return 0
	}
	if err := Serve(context.Background(), opts, os.Stdin, os.Stdout); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	return 0
}

// fakeShard answers every run with the error "injected failure" and a
// partial result: 4 of its connections opened, the others failed. Given
// an Authorization header, it echoes it in its error, a warning and its
// log, as a shard given a secret could.
func fakeShard() {
	enc := json.NewEncoder(os.Stdout)
	_ = enc.Encode(Reply{Op: "ready", Ready: true, Pid: os.Getpid()})
	sc := bufio.NewScanner(os.Stdin)
	var echo string
	var warn []string
	for sc.Scan() {
		var r Request
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Op == "close" {
			return
		}
		if r.Op == "options" {
			for _, h := range r.Options.Headers {
				if h[0] == "Authorization" {
					echo, warn = ": "+strconv.Quote(h[1]), []string{"sent " + h[1]}
					os.Stderr.WriteString("log: " + h[1] + "\n")
				}
			}
			_ = enc.Encode(Reply{Op: "options"})
			continue
		}
		if r.Op != "run" {
			continue
		}
		p, _ := client.DecodeParams(r.Kind, r.Params)
		res := client.NewResult(p)
		if c, ok := res.(*client.ConnectResult); ok {
			q := p.(*client.ConnectParams)
			*c = client.ConnectResult{Total: int64(q.Connections), Success: 4, Failed: int64(q.Connections) - 4,
				Latency: client.NewHist(), Errors: client.Reasons{"injected": int64(q.Connections) - 4}}
		}
		b, _ := json.Marshal(res)
		_ = enc.Encode(Reply{Op: "run", Kind: r.Kind, Result: b, Err: "injected failure" + echo, Warnings: warn, Conns: 4})
	}
}

// dropServer is a WebSocket echo server that can drop connections.
type dropServer struct{ *testserver.Server }

// open is the number of the server's live connections.
func (s *dropServer) open() int64 { return s.Live() }

func newDropServer(t *testing.T) *dropServer {
	t.Helper()
	return &dropServer{testserver.Start(t, testserver.Options{})}
}

// drop closes n of the server's connections.
func (s *dropServer) drop(n int) { s.Drop(n) }

// startGroup starts n test shards against srv; with failing, the last one
// is a fakeShard.
func startGroup(t *testing.T, srv *dropServer, n int, failing bool) *Group {
	t.Helper()
	return startGroupAt(t, strings.TrimPrefix(srv.URL, "http://"), n, failing)
}

// startGroupAt is startGroup against a server's host:port.
func startGroupAt(t *testing.T, addr string, n int, failing bool) *Group {
	t.Helper()
	return startGroupSpec(t, Spec{N: n, Client: client.Options{Targets: []string{addr}, Path: "/ws"}}, failing)
}

// startGroupSpec starts s's test shards; with failing, the last one is a
// fakeShard.
func startGroupSpec(t *testing.T, s Spec, failing bool) *Group {
	t.Helper()
	n := s.N
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sources := make([][]string, n)
	if failing {
		t.Setenv(failEnv, "1")
		sources[n-1] = []string{"127.0.0.1"}
	}
	s.Exe, s.Sources, s.Name, s.Grace = exe, sources, "test", time.Second
	g, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return g
}

// connect opens conns connections through the connect phase kind.
func connect(t *testing.T, env *scenarios.Env, conns int) {
	t.Helper()
	p := &scenarios.Connect{ConnectParams: client.ConnectParams{Connections: conns}}
	scenarios.Defaults(p, scenarios.Context{})
	out, err := p.Run(t.Context(), env)
	if err != nil || out.Failed || out.Metrics.Int("success") != int64(conns) {
		t.Fatalf("connect: %v %v %v", out.Metrics, out.Error, err)
	}
}

// TestGroupEchoShardError: a shard whose echo fails (it lost connections
// since its last reply, so its share of the concurrency exceeds what it
// has open) fails the phase with the shard's reason.
func TestGroupEchoShardError(t *testing.T) {
	srv := newDropServer(t)
	g := startGroup(t, srv, 2, false)
	env := &scenarios.Env{Driver: g, Progress: &client.Progress{}}
	connect(t, env, 20)
	srv.drop(3)
	time.Sleep(200 * time.Millisecond) // the shards read the drops
	p := &echo.Phase{Params: echo.Params{Total: 2000}}
	scenarios.Defaults(p, scenarios.Context{Conns: 20})
	_, err := p.Run(t.Context(), env)
	if err == nil || !strings.Contains(err.Error(), "shard ") || !strings.Contains(err.Error(), "exceeds the") {
		t.Fatalf("echo with connections gone: error %v, want a shard's 'concurrency … exceeds the … open connections'", err)
	}
}

// TestGroupConnectShardError: a shard whose connect fails fails the phase
// with its reason, and what it measured is merged with the other shard's.
func TestGroupConnectShardError(t *testing.T) {
	srv := newDropServer(t)
	g := startGroup(t, srv, 2, true)
	p := &scenarios.Connect{ConnectParams: client.ConnectParams{Connections: 20}}
	scenarios.Defaults(p, scenarios.Context{})
	out, err := p.Run(t.Context(), &scenarios.Env{Driver: g})
	if err == nil || !strings.Contains(err.Error(), "shard 1: injected failure") {
		t.Fatalf("error %v, want shard 1's", err)
	}
	v := scenarios.Judge(scenarios.PhaseFaults("connect", p), nil, out.Metrics, out.Reasons, nil)
	if m := out.Metrics; m.Int("success") != 14 || m.Int("failed") != 6 || len(v.Failures) != 1 || !strings.Contains(v.Failures[0], "6 of 20 connections failed: injected ×6") {
		t.Errorf("metrics %v, failures %q; want 10+4 opened, 6 failed (injected)", m, v.Failures)
	}
}

// TestGroupEchoInterrupted: an echo cut short on shards keeps what it
// measured, with the error.
func TestGroupEchoInterrupted(t *testing.T) {
	srv := newDropServer(t)
	g := startGroup(t, srv, 2, false)
	env := &scenarios.Env{Driver: g}
	connect(t, env, 20)
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	p := &echo.Phase{Params: echo.Params{Total: 1 << 40, Payload: sizeOf(64)}}
	scenarios.Defaults(p, scenarios.Context{Conns: 20})
	out, err := p.Run(ctx, env)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("interrupted echo: error %v, want the context's", err)
	}
	if m := out.Metrics; m.Int("success") <= 0 || m.Int("total") != 1<<40 || m.Dur("p50") <= 0 {
		t.Errorf("interrupted echo kept %v, want its successes and latencies", m)
	}
	// Both shards measured: the histogram holds both shares.
	res, err := g.Run(t.Context(), &echo.Params{Total: 400, Concurrency: 20, Payload: new(units.Size(64)), Verify: new(true)}, nil)
	if err != nil || res.(*echo.Result).Success != 400 || res.(*echo.Result).Latency.TotalCount() != 400 {
		t.Errorf("echo after the interrupted one: %+v, %v", res, err)
	}
}

func sizeOf(n units.Size) *units.Size { return &n }

// TestGroupMasksSecrets: a shard is given the plan's secrets to do its
// job (here an Authorization header); what it sends back — its error and
// warnings — and its log show them masked in every form.
func TestGroupMasksSecrets(t *testing.T) {
	const token = `s3cr"et\tok`
	srv := newDropServer(t)
	var set secret.Set
	set.Add(token)
	dir := t.TempDir()
	for _, masked := range []bool{false, true} {
		s := Spec{N: 2, LogDir: dir, Client: client.Options{Targets: []string{strings.TrimPrefix(srv.URL, "http://")}, Path: "/ws",
			Headers: [][2]string{{"Authorization", "Bearer " + token}}}}
		if masked {
			s.Secrets = &set
		}
		g := startGroupSpec(t, s, true)
		p := &scenarios.Connect{ConnectParams: client.ConnectParams{Connections: 20}}
		scenarios.Defaults(p, scenarios.Context{})
		out, err := p.Run(t.Context(), &scenarios.Env{Driver: g})
		g.Close()
		log, rerr := os.ReadFile(filepath.Join(dir, "test-shard-1.log"))
		if rerr != nil {
			t.Fatal(rerr)
		}
		text := fmt.Sprint(err) + "\n" + fmt.Sprint(out.Warnings) + "\n" + string(log)
		quoted := strconv.Quote(token)
		shows := strings.Contains(text, token) || strings.Contains(text, quoted[1:len(quoted)-1])
		if shows == masked || (masked && !strings.Contains(text, `injected failure: "Bearer ***"`)) {
			t.Errorf("masked %v: %s", masked, text)
		}
	}
}
