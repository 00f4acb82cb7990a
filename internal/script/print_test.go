package script

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLines(t *testing.T) {
	src := `
- send: '{"op":"login","user":{{json .row.user}}}'
- expect: {json: {$.op: login_ok}, capture: {token: $.token}, as: login, timeout: 5s}
- send: {binary: 'b{{.seq}}'}
- think: 100ms
- think: {exponential: 1s}
- loop:
    count: 50
    inflight: 8
    steps:
      - send: '{"id":{{.seq}}}'
      - expect: {correlate: $.id, until: {regex: done}, as: request}
      - loop:
          duration: 2s
          steps:
            - think: {uniform: [10ms, 50ms]}
- emit: {event: chat, data: '{"n":1}', ack: true, as: chat, reply: {json: {'$[0].n': "1"}}}
- call: {method: sum, params: '[1,2]', as: sum}
- notify: {method: log}
- publish: {topic: "multi\nline", payload: x, qos: 1, receipt: true}
- subscribe: {topic: t, qos: 2, variables: '{"a":1}'}
- unsubscribe: {topic: "1"}
- close: true
- close: {code: 4000}
`
	want := []string{
		`- send: '{"op":"login","user":{{json .row.user}}}'`,
		`- expect: {json: {$.op: login_ok}, timeout: 5s, as: login, capture: {token: $.token}}`,
		`- send: {binary: 'b{{.seq}}'}`,
		`- think: 100ms`,
		`- think: {exponential: 1s}`,
		`- loop: {count: 50, inflight: 8}`,
		`    - send: '{"id":{{.seq}}}'`,
		`    - expect: {until: {regex: done}, as: request, correlate: $.id}`,
		`    - loop: {duration: 2s}`,
		`        - think: {uniform: [10ms, 50ms]}`,
		`- emit: {event: chat, data: '{"n":1}', ack: true, as: chat, reply: {json: {'$[0].n': "1"}}}`,
		`- call: {method: sum, params: '[1,2]', as: sum}`,
		`- notify: {method: log}`,
		`- publish: {topic: "multi\nline", payload: x, qos: 1, receipt: true}`,
		`- subscribe: {topic: t, qos: 2, variables: '{"a":1}'}`,
		`- unsubscribe: {topic: "1"}`,
		`- close: true`,
		`- close: {code: 4000}`,
	}
	var steps []Step
	if err := yaml.Unmarshal([]byte(src), &steps); err != nil {
		t.Fatal(err)
	}
	got := Lines(steps)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Each top-level line is the plan's own YAML: read back, it is the
	// step it was printed from (a loop without its steps).
	var top []Step
	for _, l := range got {
		if strings.HasPrefix(l, "- ") {
			var s Step
			if err := yaml.Unmarshal([]byte(strings.TrimPrefix(l, "- ")), &s); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			top = append(top, s)
		}
	}
	if len(top) != len(steps) {
		t.Fatalf("%d top-level lines, want %d", len(top), len(steps))
	}
	for i := range steps {
		w := steps[i]
		if w.Loop != nil {
			l := *w.Loop
			l.Steps = nil
			w.Loop = &l
		}
		if !reflect.DeepEqual(top[i], w) {
			t.Errorf("%s read back as %+v, want %+v", got[i], top[i], w)
		}
	}
}
