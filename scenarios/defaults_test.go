package scenarios

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wsplan/wsplan/internal/decl"
)

// TestTagDefaultsMatchClient: a default is declared once, in a param tag;
// where internal/client (which imports nothing of this module) keeps the
// same default for a zero parameter, or this package needs it as a
// constant, the two agree, so that they cannot drift apart.
func TestTagDefaultsMatchClient(t *testing.T) {
	for _, c := range []struct {
		phase Phase
		key   string
		want  any // the constant, in the field's type
	}{
		// What a phase that opens connections of its own uses when it has
		// no keys for them (search's vary: connections), and the connect
		// phase's tags.
	} {
		name := fmt.Sprintf("%T.%s", c.phase, c.key)
		got, ok := decl.Default(c.phase, c.key)
		if !ok {
			t.Errorf("%s: no default tag", name)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: tag default %v (%T), the constant is %v (%T)", name, got, got, c.want, c.want)
		}
	}
	// Defaults a doc tag states.
	for _, c := range []struct {
		phase    Phase
		key, doc string
	}{
		{&Connect{}, "concurrency", fmt.Sprintf("min(%d, connections)", DefaultConnectConcurrency)},
	} {
		if d := docOf(c.phase, c.key); !strings.Contains(d, c.doc) {
			t.Errorf("%T.%s: doc %q does not say %q", c.phase, c.key, d, c.doc)
		}
	}
}

// docOf is the doc tag of p's field with YAML key key.
func docOf(p Phase, key string) string {
	for _, f := range decl.Fields(reflect.ValueOf(p)) {
		if f.Key == key {
			return f.Struct.Tag.Get("doc")
		}
	}
	return ""
}
