package har

import (
	"errors"
	"reflect"

	"github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/scenarios"
)

// A HAR's WebSockets become phases of the kind that runs internal/script's
// steps. That kind is a package of its own (scenarios/script) this one does
// not import, so that the module builds without it (internal/layering's
// TestKindPackagesApart): it is found in the kind registry, as the kind
// whose phase has a Steps field of script steps, and its keys are read
// from that phase's tags.

// errNoStepsKind is Generate's error in a build without the script kind.
var errNoStepsKind = errors.New("no phase kind runs script steps in this build: a HAR cannot be imported")

// stepsType is the type of the script steps a phase holds.
var stepsType = reflect.TypeFor[[]script.Step]()

// stepsKind returns the registered kind whose phase runs script steps
// and the phase's struct type; ok is false when no kind does.
func stepsKind() (name string, phase reflect.Type, ok bool) {
	for _, k := range scenarios.Kinds() {
		if k.New == nil {
			continue
		}
		t := reflect.TypeOf(k.New())
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			continue
		}
		if f, found := t.FieldByName("Steps"); found && f.Type == stepsType {
			return k.Name, t, true
		}
	}
	return "", nil, false
}

// phaseKey is the YAML key of a field of the steps kind's phase, as the
// kind declares it; "" without the kind.
func phaseKey(field string) string {
	_, t, ok := stepsKind()
	if !ok {
		return ""
	}
	return yamlKey(t, field)
}

// UsersKey is the steps phase's key Options.Users writes: `wsplan import
// har --users` is named after it. It is "" in a build without that kind,
// where the command has no such flag (and Generate fails).
func UsersKey() string { return phaseKey("Users") }
