package plan

import (
	"path/filepath"
	"strings"
)

// setDefaults fills every zero plan-level field with its documented
// default: the default tags of the keys' declarations, at every depth
// (declared.go), and the name, which no tag can state. It is the only
// place plan defaults are applied.
func (l *loader) setDefaults(p *Plan) {
	if p.Name == "" {
		base := filepath.Base(p.File)
		p.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	declaredDefaults(p)
}
