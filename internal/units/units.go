// Package units parses the value types plans and flags share: durations
// ("10s", "1m30s"), byte sizes ("1024", "1KiB", "4MB") and rates (0.1, 200).
// Each type implements yaml.Unmarshaler, encoding.TextUnmarshaler (flags,
// JSON) and fmt.Stringer, so a value reads the same wherever it is written.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as Go writes durations ("500ms", "10s").
// A bare integer is rejected: it is ambiguous.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalText parses a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
			return fmt.Errorf("bad duration %q: add a unit, e.g. %ss", s, s)
		}
		return fmt.Errorf("bad duration %q: want e.g. 500ms, 10s, 1m30s", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as Go does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalYAML parses a scalar duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration such as 10s")
	}
	return d.UnmarshalText([]byte(n.Value))
}

// Size is a number of bytes, written as an integer or with a unit:
// B, KB/MB/GB (powers of 1000), KiB/MiB/GiB (powers of 1024), K/M/G = KiB/MiB/GiB.
type Size int64

func (s Size) String() string {
	n := int64(s)
	switch {
	case n != 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n != 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n != 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

// ParseSize parses a size such as "1024", "1KiB", "4MB".
func ParseSize(s string) (Size, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("bad size %q: want e.g. 1024, 1KiB, 4MB", s)
	}
	v := f * float64(mult)
	if v > math.MaxInt64/2 || v < math.MinInt64/2 {
		return 0, fmt.Errorf("size %q is out of range", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("bad size %q: not a whole number of bytes", s)
	}
	return Size(v), nil
}

// UnmarshalText parses a size.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalText writes the size.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalYAML parses a scalar size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a size such as 1024 or 1KiB")
	}
	return s.UnmarshalText([]byte(n.Value))
}

// Rate is a number of events per second; fractions are allowed ("0.1").
type Rate float64

func (r Rate) String() string { return strconv.FormatFloat(float64(r), 'g', -1, 64) }

// UnmarshalText parses a rate, optionally suffixed "/s".
func (r *Rate) UnmarshalText(b []byte) error {
	s := strings.TrimSuffix(strings.TrimSpace(string(b)), "/s")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("bad rate %q: want messages per second, e.g. 200 or 0.5", string(b))
	}
	*r = Rate(f)
	return nil
}

// UnmarshalJSON reads a rate as JSON writes it (a number), or a string
// as UnmarshalText does.
func (r *Rate) UnmarshalJSON(b []byte) error {
	if s, err := strconv.Unquote(string(b)); err == nil {
		b = []byte(s)
	}
	return r.UnmarshalText(b)
}

// UnmarshalYAML parses a scalar rate.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a rate such as 200")
	}
	return r.UnmarshalText([]byte(n.Value))
}
