package decl

import (
	"reflect"
	"slices"
	"testing"

	"github.com/wsplan/wsplan/internal/units"
)

type inner struct {
	QoS int `yaml:"qos" min:"0" max:"2" doc:"MQTT QoS"`
}

type mode string

func (mode) Values() []string { return []string{"fast", "slow", "off"} }

type sample struct {
	Mode  mode           `yaml:"mode" default:"fast"`
	N     int            `yaml:"n" required:"true" min:"1" max:"10"`
	Size  *units.Size    `yaml:"size" default:"1KiB" min:"16" max:"1MiB" hint:"a marker"`
	Wait  units.Duration `yaml:"wait" default:"10s" min:"0s"`
	Rate  float64        `yaml:"rate" min:"0.5"`
	Inner inner          `yaml:",inline"`
	Pair  []int          `yaml:"pair" min:"2" max:"2"`
	Some  []int          `yaml:"some" min:"1" max:"3"`
	Skip  int            `yaml:"-"`
}

func TestCheck(t *testing.T) {
	size := func(s units.Size) *units.Size { return &s }
	for _, c := range []struct {
		name string
		v    sample
		want []string
	}{
		{"within", sample{N: 3, Size: size(16), Rate: 0.5}, nil},
		{"required", sample{Rate: 1}, []string{"n: must be > 0, got 0"}},
		{"above", sample{N: 11, Size: size(2 << 20), Rate: 1}, []string{"n: must be <= 10, got 11", "size: must be <= 1MiB, got 2MiB"}},
		{"below with hint", sample{N: 1, Size: size(8), Rate: 1}, []string{"size: must be >= 16 (a marker), got 8"}},
		{"negative duration", sample{N: 1, Wait: -units.Duration(1e9), Rate: 1}, []string{"wait: must be >= 0, got -1s"}},
		{"float", sample{N: 1, Rate: 0.25}, []string{"rate: must be >= 0.5, got 0.25"}},
		{"inline, a few values", sample{N: 1, Rate: 1, Inner: inner{QoS: 3}}, []string{"qos: must be 0, 1 or 2, got 3"}},
		{"list lengths", sample{N: 1, Rate: 1, Pair: []int{1}, Some: []int{1, 2, 3, 4}}, []string{"pair: must have 2 items, got 1", "some: must have at most 3 items, got 4"}},
		{"enum", sample{N: 1, Rate: 1, Mode: "quick"}, []string{`mode: must be fast, slow or off, got "quick"`}},
		{"enum within", sample{N: 1, Rate: 1, Mode: "off"}, nil},
		{"list lengths within", sample{N: 1, Rate: 1, Pair: []int{1, 2}, Some: []int{1}}, nil},
	} {
		var got []string
		for _, e := range Check(&c.v) {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDefaultsAndKeys(t *testing.T) {
	var s sample
	Defaults(&s)
	if s.Size == nil || *s.Size != 1024 || s.Wait != units.Duration(10e9) || s.N != 0 {
		t.Errorf("defaults: got size %v wait %v n %d", s.Size, s.Wait, s.N)
	}
	s.Wait = 5
	Defaults(&s)
	if s.Wait != 5 {
		t.Errorf("a set field was overwritten: %v", s.Wait)
	}
	if d, ok := Default(&sample{}, "wait"); !ok || d != units.Duration(10e9) {
		t.Errorf("Default(wait) = %v, %v", d, ok)
	}
	if _, ok := Default(&sample{}, "rate"); ok {
		t.Error("Default(rate): a key without a default has one")
	}
	if got, want := Keys(reflect.TypeOf(sample{})), []string{"mode", "n", "size", "wait", "rate", "qos", "pair", "some"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %q, want %q", got, want)
	}
	if got := Range(reflect.TypeOf(sample{}).Field(1)); got != "in [1, 10]" {
		t.Errorf("Range(n) = %q", got)
	}
}
