package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzLoad: whatever the bytes, Load returns either a plan or problems
// that each name a line inside the file and say something; never a panic,
// and the same answer twice.
//
//	go test -fuzz=FuzzLoad ./internal/plan
func FuzzLoad(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "", "")
		f.Add(data, "conns=5", "fake_plan_test")
	}
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a]\nservers: [*b, *b]\n"), "", "")
	f.Add([]byte("vars: {a: x}\nname: ${a}${b}$${c}${\n"), "a=", "")
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed), "", "")
	}

	f.Fuzz(func(t *testing.T, data []byte, set, only string) {
		var opts LoadOptions
		if k, v, ok := strings.Cut(set, "="); ok {
			opts.Sets = map[string]string{k: v}
		}
		if only != "" {
			opts.Only = strings.Split(only, ",")
		}
		// Loading is bounded: two loads well within the property's 2 s
		// and 200 MB (allocated in all, a bound on the peak).
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		p, err := LoadBytes("fuzz.yaml", data, opts)
		again, err2 := LoadBytes("fuzz.yaml", data, opts)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; took > 2*time.Second || alloc > 200<<20 {
			t.Fatalf("%d bytes: two loads took %v and allocated %d MB", len(data), took, alloc>>20)
		}
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("two loads differ:\n%v\n--- then ---\n%v", err, err2)
		}
		if err == nil {
			if p == nil || again == nil {
				t.Fatal("no plan and no error")
			}
			if len(p.Phases) == 0 || p.Defaults.NoDelay == nil || p.Defaults.Ports < 1 || p.Name == "" {
				t.Fatalf("accepted plan breaks an invariant: %+v", p)
			}
			return
		}
		if p != nil {
			t.Fatal("a plan returned with errors")
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error %T is not a non-empty plan.Errors: %v", err, err)
		}
		lines := yamlLines(data)
		for _, e := range errs {
			if e == nil || e.Line < 0 || e.Line > lines || e.Msg == "" || e.File != "fuzz.yaml" {
				t.Fatalf("malformed error %#v (file has %d lines)", e, lines)
			}
		}
	})
}

// fuzzSeeds are small plans of each class the loader bounds or relates
// (hostile shapes, steps and their bounds, protocol settings), for the
// fuzzer to grow.
var fuzzSeeds = []string{
	hostileBase + "phases:\n" + deepLoops(30),
	hostileBase + "vars:\n  a: xx\n  b: ${a}${a}${a}${a}\n  c: ${b}${b}${b}${b}\nname: ${c}${c}\nphases: [{connect: {}}]\n",
	hostileBase + "t: &t '{{.seq}}{{randString 4096}}'\nphases:\n  - script: {users: 1, steps: [{send: *t}, {send: *t}]}\n",
	hostileBase + "phases:\n  - script: {users: 1, steps: [{publish: {topic: t, qos: 3}}, {loop: {count: -1, duration: -3s, inflight: -1, steps: [{send: x}]}}, {expect: {count: -1, timeout: -1s}}, {think: -1s}]}\n",
	hostileBase + "phases:\n  - script: {arrival_rate: 0.05, duration: 10s, data: {file: /dev/zero}, steps: [{emit: {event: e, ack: true, timeout: -1s}}, {call: {method: m}}, {close: {code: 1005}}]}\n",
	"servers:\n  - {name: b, url: \"ws://127.0.0.1:1/\", protocol: {name: stomp, version: \"1.1\", namespace: chat, keepalive: -1s, host: /vh, init: x}}\nphases: [{connect: {}}]\n",
	"defaults: {protocol: {name: socketio, namespace: /chat}}\nservers: [{name: fake_plan_test, protocol: mqtt}]\nphases: [{connect: {}}, {churn: {duration: 5s, rate: .inf, faults: [{restart: server, at: 10m}]}}]\n",
	hostileBase + "vars: {a: 1}\nmatrix: {a: [1, 2, 3]}\nphases: [{connect: {connections: ${a}}}, {search: {factor: .nan}}]\n",
	// Short forms and mappings of the same keys.
	hostileBase + "phases:\n  - script: {users: 1, steps: [{send: {text: a, binary: b}}, {think: {fixed: 1s, jitter: 2s, uniform: [1s]}}, {think: [1s]}, {close: false}, {close: {code: 999}}, {send: [x]}]}\n",
	"defaults: {tls: true, compression: {client_max_window_bits: 7, window: 1}}\nservers:\n  - {name: b, url: \"wss://127.0.0.1:1/\", tls: {max_version: 1.1, groups: [], certificate: dsa}, compression: yes}\nphases: [{connect: {}}]\n",
}

// yamlLines counts lines as YAML does: \n, \r\n, \r, and (as libyaml)
// NEL, LS and PS break lines.
func yamlLines(data []byte) int {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	n := 1
	for _, sep := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		n += strings.Count(s, sep)
	}
	return n
}

// TestAliasBomb: aliases that expand exponentially stop at maxNodes with
// an error instead of running out of time or memory.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("servers: [{name: fake_plan_test}]\nx0: &a0 {connections: 1}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "x%d: &a%d {<<: [*a%d, *a%d]}\n", i, i, i-1, i-1)
	}
	b.WriteString("phases:\n  - connect: *a40\n  - connect: {<<: [*a40, *a40]}\n")
	start := time.Now()
	_, err := LoadBytes("bomb.yaml", []byte(b.String()), LoadOptions{})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	want := fmt.Sprintf("bomb.yaml: the document has more than %d nodes once aliases are expanded", maxNodes)
	if err == nil || !strings.HasPrefix(err.Error(), want+"\n") {
		t.Errorf("error:\n%.500v\nwant first: %s", err, want)
	}
}
