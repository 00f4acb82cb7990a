package result

import (
	"reflect"
	"runtime/debug"
	"testing"

	"github.com/wsplan/wsplan/internal/metrics"
)

func TestProvenanceFrom(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/wsplan/wsplan", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/lxzan/gws", Version: "v1.8.9"},
			{Path: "github.com/gorilla/websocket", Version: "v1.5.3", Replace: &debug.Module{Path: "../gorilla"}},
			{Path: "nhooyr.io/websocket", Version: "v1.8.17", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.8.18"}},
		},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.modified", Value: "true"},
			{Key: "vcs.time", Value: "2026-12-03T07:00:00Z"},
		},
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		libs []string
		want Provenance
		str  string
	}{
		{
			name: "checkout build",
			bi:   bi,
			libs: []string{"github.com/lxzan/gws", "", "github.com/gorilla/websocket", "nhooyr.io/websocket", "example.com/absent", "github.com/lxzan/gws"},
			want: Provenance{Version: "(devel)", Revision: "0123456789abcdef0123", Modified: true, Time: "2026-12-03T07:00:00Z", Go: "go1.26.8",
				Libraries: map[string]string{
					"github.com/lxzan/gws":         "v1.8.9",
					"github.com/gorilla/websocket": "../gorilla",
					"nhooyr.io/websocket":          "example.com/fork v1.8.18",
					"example.com/absent":           "unknown",
				}},
			str: "wsplan (devel) 0123456789ab (modified, 2026-12-03T07:00:00Z) go1.26.8",
		},
		{
			name: "no build info",
			bi:   nil,
			libs: nil,
			want: Provenance{Version: "unknown", Go: "go1.0"},
			str:  "wsplan unknown go1.0",
		},
		{
			name: "tagged install",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			want: Provenance{Version: "v0.3.0", Go: "go1.26.8"},
			str:  "wsplan v0.3.0 go1.26.8",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ProvenanceFrom(tc.bi, "go1.0", tc.libs)
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v\nwant %+v", *got, tc.want)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String() = %q, want %q", s, tc.str)
			}
		})
	}
}

func TestNewProvenanceRunningBinary(t *testing.T) {
	p := NewProvenance([]string{"github.com/lxzan/gws"})
	if p.Go == "" || p.Version == "" {
		t.Fatalf("empty provenance: %+v", p)
	}
	// The test binary links gws only if this package imported it; it does
	// not, so the version is unknown, and says so instead of being empty.
	if v := p.Libraries["github.com/lxzan/gws"]; v == "" {
		t.Errorf("library version empty: %+v", p.Libraries)
	}
}

// TestProvenanceRoundTrip: the wsplan object survives --json and a read
// back; a file without it reads as nil.
func TestProvenanceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	run := &Run{Schema: Schema, Wsplan: ProvenanceFrom(nil, "go1.26.8", []string{"github.com/lxzan/gws"})}
	path := dir + "/r.json"
	if err := run.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path, func(string, metrics.Values) []metrics.Def { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Wsplan, run.Wsplan) {
		t.Errorf("read back %+v, wrote %+v", back.Wsplan, run.Wsplan)
	}
	run.Wsplan = nil
	if err := run.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if back, err = ReadFile(path, func(string, metrics.Values) []metrics.Def { return nil }); err != nil || back.Wsplan != nil {
		t.Errorf("without provenance: %+v, %v", back.Wsplan, err)
	}
}
