package scenarios

import (
	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/script"
)

// Describer is implemented by phases whose parameters do not read as one
// line (a script's nested steps). Describe returns the phase's resolved
// parameters as wsplan validate prints them: the first line follows the
// phase's name, the others go under it, each indented by its own nesting
// and written in the plan's own short form.
type Describer interface {
	Describe() []string
}

// Describe returns p's resolved parameters, defaults applied, as wsplan
// validate prints them: its Describer's lines when it has one, else one
// flow mapping of every parameter in declaration order.
func Describe(p Phase) []string {
	if d, ok := p.(Describer); ok {
		return d.Describe()
	}
	return []string{FlowParams(p, nil)}
}

// FlowParams returns the parameters of p whose YAML keys keep accepts
// (nil: all) as one flow mapping, in declaration order: {total: 100,
// payload: 1KiB}. A value that cannot be encoded shows its error.
func FlowParams(p any, keep func(key string) bool) string {
	var n yaml.Node
	if err := n.Encode(p); err != nil {
		return err.Error()
	}
	if n.Kind == yaml.MappingNode && keep != nil {
		var kept []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if keep(n.Content[i].Value) {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
	}
	return script.OneLine(&n)
}
