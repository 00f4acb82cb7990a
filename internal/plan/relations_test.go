package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// relationURL is a url: server that restarts, before its protocol.
const relationURL = `{name: b, url: "ws://127.0.0.1:1/", restart_command: "true", protocol: `

// relationCases are TestRelations' plans, a class at a time: one that
// breaks it, one that keeps it.
var relationCases = []struct {
	name string
	plan string
	want []string // every problem; none = loads
}{
	// A fault's time lies within its phase.
	{"fault after the phase", "servers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 1}\n  - hold:\n      duration: 5s\n      faults: [{restart: server, at: 10m}]\n",
		[]string{`t.yaml:6: phases[1].hold.faults[0].at: 10m0s is not within the phase's duration (5s): the fault would never happen`}},
	{"fault at the end", "servers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 1}\n  - hold:\n      duration: 5s\n      faults: [{restart: server, at: 5s}]\n",
		[]string{`t.yaml:6: phases[1].hold.faults[0].at: 5s is not within the phase's duration (5s): the fault would never happen`}},
	{"fault within", "servers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 1}\n  - hold: {duration: 5s, faults: [{restart: server, at: 4s}]}\n", nil},
	// Arrivals bring a user at least.
	{"no arrival", "servers: [{name: fake_plan_test}]\nphases:\n  - script:\n      arrival_rate: 0.05\n      duration: 10s\n      steps: [{send: x}]\n",
		[]string{`t.yaml:4: phases[0].script.arrival_rate: 0.05/s for 10s brings no user: raise arrival_rate or duration so that they bring one at least`}},
	{"one arrival", "servers: [{name: fake_plan_test}]\nphases:\n  - script: {arrival_rate: 0.1, duration: 10s, steps: [{send: x}]}\n", nil},
	// Every number is finite.
	{"infinite rate", "servers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 2}\n  - churn:\n      duration: 5s\n      rate: .inf\n",
		[]string{`t.yaml:6: phases[1].churn.rate: want a finite number, got .inf`}},
	{"rate not a number", "servers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 2}\n  - churn:\n      duration: 5s\n      rate: .nan\n",
		[]string{`t.yaml:6: phases[1].churn.rate: want a finite number, got .nan`}},
	{"finite rate", "servers: [{name: fake_plan_test}]\nphases:\n  - connect: {connections: 2}\n  - churn: {duration: 5s, rate: 1.5}\n", nil},
	// A namespace has its form; a setting belongs to its protocol.
	{"namespace without /", "servers:\n  - " + relationURL + "{name: socketio, namespace: chat}}\nphases: [{connect: {connections: 1}}]\n",
		[]string{`t.yaml:2: servers[0].protocol: socketio: namespace "chat": want a path with a leading / (write /chat)`}},
	{"namespace", "servers:\n  - " + relationURL + "{name: socketio, namespace: /chat}}\nphases: [{connect: {connections: 1}}]\n", nil},
	{"another protocol's settings", "servers:\n  - " + relationURL + `{name: stomp, version: "1.1", namespace: /chat}}` + "\nphases: [{connect: {connections: 1}}]\n",
		[]string{`t.yaml:2: servers[0].protocol: version is a mqtt setting, not stomp's; namespace is a socketio setting, not stomp's`}},
	{"its own settings", "servers:\n  - " + relationURL + `{name: stomp, host: /vh, keepalive: 5s}}` + "\nphases: [{connect: {connections: 1}}]\n", nil},
	// A preset speaks no protocol.
	{"preset under a default protocol", "defaults:\n  protocol: mqtt\nservers: [{name: fake_plan_test}]\nphases: [{connect: {connections: 1}}]\n",
		[]string{`t.yaml:2: defaults.protocol: applies to no server: every server is a built-in preset, which speaks raw WebSocket messages (protocol: is for command: and url: servers)`}},
	{"preset with a protocol", "servers:\n  - {name: fake_plan_test, protocol: mqtt}\nphases: [{connect: {connections: 1}}]\n",
		[]string{`t.yaml:2: servers[0].protocol: fake_plan_test is a built-in preset, which speaks raw WebSocket messages, not mqtt: protocol: is for command: and url: servers`}},
	{"default protocol for a url server", "defaults:\n  protocol: mqtt\nservers:\n  - {name: fake_plan_test}\n  - {name: b, url: \"ws://127.0.0.1:1/\"}\nphases: [{connect: {connections: 1}}]\n", nil},
	// A step's bounds, at any depth.
	{"step bounds", `servers: [{name: b, url: "ws://127.0.0.1:1/", protocol: mqtt}]
phases:
  - script:
      users: 1
      steps:
        - publish:
            topic: t
            qos: 3
        - loop:
            count: 2
            steps:
              - loop:
                  duration: -3s
                  steps: [{send: x}]
        - send: x
        - expect:
            count: -1
            timeout: -1s
        - think: -1s
`, []string{
		`t.yaml:8: phases[0].script.steps[0].publish.qos: must be 0, 1 or 2, got 3`,
		`t.yaml:13: phases[0].script.steps[1].loop.steps[0].loop.duration: must be >= 0, got -3s`,
		`t.yaml:17: phases[0].script.steps[3].expect.count: must be >= 0, got -1`,
		`t.yaml:18: phases[0].script.steps[3].expect.timeout: must be >= 0, got -1s`,
		`t.yaml:19: phases[0].script.steps[4].think.fixed: must be >= 0, got -1s`,
	}},
}

// TestRelations: the relations between keys, checked at load with the
// line and path of the key that breaks them; each class with a plan that
// keeps it.
func TestRelations(t *testing.T) {
	for _, tc := range relationCases {
		p, err := LoadBytes("t.yaml", []byte(tc.plan), LoadOptions{})
		var got []string
		var errs Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				got = append(got, e.Error())
			}
		} else if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, strings.Join(got, "\n     "), strings.Join(tc.want, "\n     "))
		}
		if tc.name == "default protocol for a url server" && p != nil {
			if p.Servers[0].Protocol != nil || p.Servers[1].Protocol.ProtocolName() != "mqtt" {
				t.Errorf("%s: protocols %v, %v; want none for the preset, mqtt for the url", tc.name, p.Servers[0].Protocol, p.Servers[1].Protocol)
			}
		}
	}
}
