package plan

import (
	"path/filepath"
	"strings"
)

// setDefaults fills every zero plan-level field with its documented
// default: the default tags of the keys' declarations, at every depth
// (declared.go), and the two defaults no tag can state. It is the only
// place plan defaults are applied.
func (l *loader) setDefaults(p *Plan) {
	if p.Name == "" {
		base := filepath.Base(p.File)
		p.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	declaredDefaults(p)
	if k := p.Client.Kubernetes; k != nil && !l.lines.isGiven("client.kubernetes.spread") {
		// spread: is the one key whose default is true: unwritten (or
		// null) is not false.
		k.Spread = true
	}
}
