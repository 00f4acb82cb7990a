package sysctl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The kernel writes sets of small integers as lists of numbers and
// inclusive ranges, "0-3,8": CPU lists (taskset -c, cpusets,
// /sys/devices/system/cpu/online) and the ports of
// net.ipv4.ip_local_reserved_ports alike. Ranges is that set; ParsePortList
// reads the ports' form (ParseCPUList the CPUs').

// Sysctl keys the engine reads and writes for the client's ports.
const (
	// PortRangeKey holds the client's ephemeral port range, "32768 60999":
	// the local ports the kernel picks from for a connect without bind.
	PortRangeKey = "net.ipv4.ip_local_port_range"
	// ReservedPortsKey holds ports (a list, see ParsePortList) that the
	// kernel never picks as ephemeral ports even inside PortRangeKey's
	// range; a server can still bind them.
	ReservedPortsKey = "net.ipv4.ip_local_reserved_ports"
)

// MaxPort is the largest TCP/UDP port.
const MaxPort = 65535

// Range is the inclusive range Lo-Hi (Lo == Hi for a single number).
type Range struct{ Lo, Hi int }

// Ranges is a set of non-negative integers as ranges that are sorted,
// disjoint and never adjacent, so String is the compact form the kernel
// prints ("8080,9000-9999"). Build one with RangesOf, ParsePortList or
// Union; the zero value is the empty set (String "").
type Ranges []Range

// RangesOf returns the set holding ns (in any order, repeats allowed).
func RangesOf(ns ...int) Ranges {
	rs := make([]Range, len(ns))
	for i, n := range ns {
		rs[i] = Range{n, n}
	}
	return compact(rs)
}

// compact sorts rs and merges ranges that overlap or touch.
func compact(rs []Range) Ranges {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Range) int { return a.Lo - b.Lo })
	var out Ranges
	for _, r := range rs {
		if n := len(out); n > 0 && r.Lo <= out[n-1].Hi+1 {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// String writes the set the kernel's way: "8080,9000-9999"; "" when empty.
func (s Ranges) String() string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r.Lo))
		if r.Hi > r.Lo {
			b.WriteString("-" + strconv.Itoa(r.Hi))
		}
	}
	return b.String()
}

// Len is the number of integers in the set.
func (s Ranges) Len() int {
	n := 0
	for _, r := range s {
		n += r.Hi - r.Lo + 1
	}
	return n
}

// Union returns the integers in s or in o.
func (s Ranges) Union(o Ranges) Ranges { return compact(append(slices.Clone(s), o...)) }

// Within returns the integers of s between lo and hi, inclusive.
func (s Ranges) Within(lo, hi int) Ranges {
	var out Ranges
	for _, r := range s {
		if r.Hi < lo || r.Lo > hi {
			continue
		}
		out = append(out, Range{max(r.Lo, lo), min(r.Hi, hi)})
	}
	return out
}

// Minus returns the integers of s that are not in o.
func (s Ranges) Minus(o Ranges) Ranges {
	var out Ranges
	for _, r := range s {
		lo := r.Lo
		for _, x := range o {
			if x.Hi < lo || x.Lo > r.Hi {
				continue
			}
			if x.Lo > lo {
				out = append(out, Range{lo, x.Lo - 1})
			}
			lo = x.Hi + 1
		}
		if lo <= r.Hi {
			out = append(out, Range{lo, r.Hi})
		}
	}
	return out
}

// ParsePortList parses a list of ports as net.ipv4.ip_local_reserved_ports
// holds it: port numbers (0 to MaxPort) and inclusive ranges separated by
// commas, "8080,9000-9999". Blank (what the kernel prints for no reserved
// ports) is the empty set. Spaces around an item and a trailing newline are
// allowed; ranges may overlap or repeat (the kernel keeps a bitmap). A
// reversed range, an empty item or anything but decimal digits is an error.
func ParsePortList(s string) (Ranges, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	rs, err := parseList(s, "port list", portNumber)
	if err != nil {
		return nil, err
	}
	return compact(rs), nil
}

// parseList reads the items of a kernel list, "8080,9000-9999", as ranges
// in the order written, reading each number with num; what names the list
// in errors ("port list").
func parseList(s, what string, num func(t, list string) (int, error)) ([]Range, error) {
	var rs []Range
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		a, b, isRange := strings.Cut(item, "-")
		lo, err := num(a, s)
		if err != nil {
			return nil, err
		}
		hi := lo
		if isRange {
			if hi, err = num(b, s); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, fmt.Errorf("bad %s %q: range %s goes down", what, s, item)
			}
		}
		rs = append(rs, Range{lo, hi})
	}
	return rs, nil
}

func portNumber(t, list string) (int, error) {
	t = strings.TrimSpace(t)
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return 0, fmt.Errorf("bad port list %q: want ports and ranges such as 8080,9000-9999, got %q", list, t)
	}
	n, err := strconv.Atoi(t)
	if err != nil || n > MaxPort {
		return 0, fmt.Errorf("bad port list %q: port %s is above %d", list, t, MaxPort)
	}
	return n, nil
}
