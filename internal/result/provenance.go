package result

import (
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// Provenance says which build of wsplan measured a run and which version of
// each measured framework library it linked, so a published table says
// exactly what was measured. It comes from the binary's build information
// (runtime/debug.ReadBuildInfo): nothing is looked up on the network.
type Provenance struct {
	// Version is wsplan's module version: a tag such as "v0.3.0" for
	// `go install …@v0.3.0`, "(devel)" for a build from a checkout.
	Version string `json:"version"`
	// Revision is the VCS commit the binary was built from; "" when the
	// build recorded none (go run, go test, a build outside a checkout).
	Revision string `json:"revision,omitempty"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Time is the commit time of Revision, RFC 3339, as the build recorded it.
	Time string `json:"time,omitempty"`
	// Go is the Go version the binary was built with, e.g. "go1.26.8".
	Go string `json:"go"`
	// Libraries maps each measured framework library's module path to the
	// version linked into this binary ("github.com/lxzan/gws": "v1.8.9");
	// a module the build does not list maps to "unknown".
	Libraries map[string]string `json:"libraries,omitempty"`
}

// NewProvenance returns the provenance of the running binary, with the
// versions of the library modules libs (module paths; duplicates and empty
// strings are ignored). It never fails: without build information (a binary
// stripped of it) Version is "unknown".
func NewProvenance(libs []string) *Provenance {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none: handled below
	return ProvenanceFrom(bi, runtime.Version(), libs)
}

// ProvenanceFrom is NewProvenance for given build information (nil = none)
// and Go version; it is what NewProvenance computes, separated for tests.
func ProvenanceFrom(bi *debug.BuildInfo, goVersion string, libs []string) *Provenance {
	p := &Provenance{Version: "unknown", Go: goVersion}
	deps := map[string]string{}
	if bi != nil {
		if bi.GoVersion != "" {
			p.Go = bi.GoVersion
		}
		if bi.Main.Version != "" {
			p.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				p.Revision = s.Value
			case "vcs.modified":
				p.Modified = s.Value == "true"
			case "vcs.time":
				p.Time = s.Value
			}
		}
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Path + " " + d.Replace.Version
				if d.Replace.Version == "" {
					v = d.Replace.Path
				}
			}
			deps[d.Path] = v
		}
	}
	for _, l := range libs {
		if l == "" {
			continue
		}
		if p.Libraries == nil {
			p.Libraries = map[string]string{}
		}
		v, ok := deps[l]
		if !ok {
			v = "unknown"
		}
		p.Libraries[l] = v
	}
	return p
}

// String is the one-line form `wsplan version` prints and reports show:
// "wsplan (devel) 3f2a1c9d0e1f (modified, 2026-12-03T07:00:00Z) go1.26.8".
func (p *Provenance) String() string {
	s := "wsplan " + p.Version
	if p.Revision != "" {
		rev := p.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " " + rev
		var extra []string
		if p.Modified {
			extra = append(extra, "modified")
		}
		if p.Time != "" {
			extra = append(extra, p.Time)
		}
		if len(extra) > 0 {
			s += " (" + strings.Join(extra, ", ") + ")"
		}
	}
	return s + " " + p.Go
}

// LibraryNames returns the library module paths, sorted.
func (p *Provenance) LibraryNames() []string {
	out := make([]string, 0, len(p.Libraries))
	for l := range p.Libraries {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}
