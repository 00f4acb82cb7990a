package script

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStepBounds: every bounded key of every step, at any depth, is
// checked against its tags: exactly the problems listed, each naming its
// field; a step within its bounds compiles.
func TestStepBounds(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []string // every problem, in order; none = compiles
	}{
		// Sad: each bounded key out of its bounds.
		{`steps: [{publish: {topic: t, qos: 3}}]`, []string{`steps[0].publish.qos: must be 0, 1 or 2, got 3`}},
		{`steps: [{publish: {topic: t, qos: 258}}]`, []string{`steps[0].publish.qos: must be 0, 1 or 2, got 258`}},
		{`steps: [{subscribe: {topic: t, qos: -1}}]`, []string{`steps[0].subscribe.qos: must be 0, 1 or 2, got -1`}},
		{`steps: [{loop: {count: -1, steps: [{send: x}]}}]`, []string{`steps[0].loop.count: must be >= 0, got -1`}},
		{`steps: [{loop: {duration: -3s, steps: [{send: x}]}}]`, []string{`steps[0].loop.duration: must be >= 0, got -3s`}},
		{`steps: [{loop: {count: 2, inflight: -2, steps: [{send: x}]}}]`, []string{`steps[0].loop.inflight: must be > 0, got -2`}},
		{`steps: [{send: x}, {expect: {count: -1}}]`, []string{`steps[1].expect.count: must be >= 0, got -1`}},
		{`steps: [{send: x}, {expect: {timeout: -1s}}]`, []string{`steps[1].expect.timeout: must be >= 0, got -1s`}},
		{`steps: [{call: {method: m, timeout: -5s}}]`, []string{`steps[0].call.timeout: must be >= 0, got -5s`}},
		{`steps: [{emit: {event: e, ack: true, timeout: -1ms}}]`, []string{`steps[0].emit.timeout: must be >= 0, got -1ms`}},
		{`steps: [{think: -1s}]`, []string{`steps[0].think.fixed: must be >= 0, got -1s`}},
		{`steps: [{think: {exponential: -1s}}]`, []string{`steps[0].think.exponential: must be >= 0, got -1s`}},
		{`steps: [{think: {fixed: 1s, jitter: -1ms}}]`, []string{`steps[0].think.jitter: must be >= 0, got -1ms`}},
		{`steps: [{think: {fixed: 10ms, jitter: 20ms}}]`, []string{`steps[0].think.jitter: must be <= fixed (10ms), got 20ms`}},
		{`steps: [{think: {fixed: 10ms, jitter: 10ms}}]`, nil},
		{`steps: [{think: {uniform: [1s]}}]`, []string{`steps[0].think.uniform: must have 2 items, got 1`}},
		{`steps: [{think: {uniform: [1s, 2s, 3s]}}]`, []string{`steps[0].think.uniform: must have 2 items, got 3`}},
		{`steps: [{think: {uniform: [2s, 1s]}}]`, []string{`steps[0].think.uniform: want [min, max] with 0 <= min <= max, got [2s 1s]`}},
		{`steps: [{close: {code: 999}}, {close: {code: 5000}}]`, []string{`steps[0].close.code: must be >= 1000, got 999`, `steps[1].close.code: must be <= 4999, got 5000`}},
		{`steps: [{loop: {count: 1, steps: [{send: x}, {loop: {count: 1, steps: [{publish: {topic: t, qos: 9}}]}}]}}]`,
			[]string{`steps[0].loop.steps[1].loop.steps[0].publish.qos: must be 0, 1 or 2, got 9`}},
		{`steps: [{loop: {count: -1, duration: -1s, steps: [{publish: {topic: t, qos: 3}}]}}]`, []string{
			`steps[0].loop.count: must be >= 0, got -1`,
			`steps[0].loop.duration: must be >= 0, got -1s`,
			`steps[0].loop.steps[0].publish.qos: must be 0, 1 or 2, got 3`,
		}},
		// Happy: at the bounds.
		{`steps: [{publish: {topic: t, qos: 0}}, {publish: {topic: t, qos: 2}}]`, nil},
		{`steps: [{loop: {count: 0, duration: 1s, inflight: 0, steps: [{send: x}]}}]`, nil},
		{`steps: [{send: x}, {expect: {count: 0, timeout: 0s}}, {think: 0ms}]`, []string{
			`steps[2].think: want one of a duration, {uniform: [min, max]} or {exponential: mean}`,
		}},
		{`steps: [{call: {method: m, timeout: 0s}}, {think: 1ms}]`, nil},
		{`steps: [{think: {uniform: [0s, 0s]}}, {close: {code: 1000}}]`, nil},
		{`steps: [{close: {code: 4999}}]`, nil},
	} {
		_, errs := Compile(Source{Steps: load(t, tc.doc), Timeout: time.Second})
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.doc, got, tc.want)
		}
	}
}

// TestTemplateBound: a template's fixed output is bounded at compile.
func TestTemplateBound(t *testing.T) {
	n := MaxTemplateBytes / (4096 + maxNumber)
	ok := strings.Repeat("{{randString 4096}}", n)
	if _, err := ParseTemplate(ok, testEnv()); err != nil {
		t.Errorf("%d random strings: %v", n, err)
	}
	_, err := ParseTemplate(ok+"{{randString 4096}}", testEnv())
	if err == nil || !strings.Contains(err.Error(), "renders more than 1048576 bytes") {
		t.Errorf("%d random strings: got %v", n+1, err)
	}
	if _, err := ParseTemplate(strings.Repeat("x", MaxTemplateBytes+1), testEnv()); err == nil {
		t.Error("a template of more than MaxTemplateBytes of text compiles")
	}
}

// TestRenderBound: at run time a template renders at most MaxRenderBytes,
// captures and data columns included; past it Append reports false and
// leaves dst as it was, whichever segment (a capture, a row, a quoted
// capture that escaping makes longer) takes it over.
func TestRenderBound(t *testing.T) {
	big := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	for _, tc := range []struct {
		doc, src string
		row, cap []byte
		ok       bool
	}{
		{"capture within", `x{{.token}}`, nil, big(MaxRenderBytes-1, 'a'), true},
		{"capture over", `xy{{.token}}`, nil, big(MaxRenderBytes-1, 'a'), false},
		{"twice over", `{{.token}}{{.token}}`, nil, big(MaxRenderBytes/2+1, 'a'), false},
		{"twice within", `{{.token}}{{.token}}`, nil, big(MaxRenderBytes/2, 'a'), true},
		{"row over", `{{.row.user}}{{.row.user}}{{.token}}`, big(MaxRenderBytes/3, 'r'), big(MaxRenderBytes/3+2, 'c'), false},
		{"quoting over", `{{json .token}}`, nil, big(MaxRenderBytes/6+1, 0), false},
		{"quoting within", `{{json .token}}`, nil, big(MaxRenderBytes/6-1, 'a'), true},
	} {
		tm, err := ParseTemplate(tc.src, testEnv())
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		v := testVars()
		if tc.row != nil {
			v.Row = [][]byte{tc.row, tc.row}
		}
		v.Captures = [][]byte{tc.cap}
		dst := []byte("kept")
		got, ok := tm.Append(dst, v)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v (%d bytes)", tc.doc, ok, tc.ok, len(got))
		}
		if len(got)-len(dst) > MaxRenderBytes || !bytes.HasPrefix(got, dst) {
			t.Errorf("%s: rendered %d bytes after %q, bound %d", tc.doc, len(got)-len(dst), got[:min(len(got), 4)], MaxRenderBytes)
		}
		if !ok && len(got) != len(dst) {
			t.Errorf("%s: over the bound, dst grew to %d bytes", tc.doc, len(got))
		}
	}
}

// TestDataLimits: a data file past a limit fails as it is read, whatever
// it is (a device that never ends, a sparse file, a file of rows); one
// within the limits is read.
func TestDataLimits(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte, size int64) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if size > 0 {
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}
	line := bytes.Repeat([]byte("x"), MaxLineBytes)
	for _, tc := range []struct {
		name string
		path string
		want error // nil: read
	}{
		{"endless device", "/dev/zero", errDataLine},
		{"size", write("big.csv", []byte("a\n"), MaxDataBytes+1), errDataSize},
		{"long line", write("long.csv", append([]byte("a\n"), append(line, 'x', 'x', '\n')...), 0), errDataLine},
		{"long jsonl line", write("long.jsonl", append([]byte(`{"a":"`), append(line, '"', '}', '\n')...), 0), errDataLine},
		{"longest line", write("longest.csv", append([]byte("a\r\n"), append(line, '\r', '\n')...), 0), nil},
		{"rows", write("rows.csv", append([]byte("a\n"), bytes.Repeat([]byte("1\n"), MaxRows+1)...), 0), nil},
		{"most rows", write("most.csv", append([]byte("a\n"), bytes.Repeat([]byte("1\n"), MaxRows)...), 0), nil},
	} {
		r, err := ReadRows(tc.path)
		switch {
		case tc.name == "rows":
			if err == nil || !strings.Contains(err.Error(), "more than 1000000 rows") {
				t.Errorf("%s: got %v, want more than %d rows", tc.name, err, MaxRows)
			}
		case tc.want != nil:
			if !errors.Is(err, tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.name == "most rows" && r.Total != MaxRows:
			t.Errorf("%s: %d rows", tc.name, r.Total)
		}
	}
}
