package har

import (
	"fmt"
	"sort"
	"strings"
)

// EnvPrefix starts the name of every environment variable a generated
// plan reads its secrets from.
const EnvPrefix = "WSPLAN_HAR_"

// minScrub is the shortest secret replaced wherever it appears in the
// plan's text (shorter ones only where they were found: a key's value, a
// header, a query parameter).
const minScrub = 8

// secrets are the credentials a recording carries, each written in the
// plan as ${env:NAME}: never their values.
type secrets struct {
	byValue map[string]string // value → variable
	byName  map[string]string // variable → value
	used    []string          // variables the plan reads, in order of first use
	isUsed  map[string]bool
	long    []string // values of at least minScrub bytes, longest first
}

func newSecrets() *secrets {
	return &secrets{byValue: map[string]string{}, byName: map[string]string{}, isUsed: map[string]bool{}}
}

// add notes a secret value, its variable named after hint (a key, header
// or cookie name); a value already noted keeps its variable.
func (s *secrets) add(value, hint string) {
	if value == "" {
		return
	}
	if _, ok := s.byValue[value]; ok {
		return
	}
	base := strings.ToUpper(ident(hint))
	if base == "" {
		base = "SECRET"
	}
	base = EnvPrefix + strings.TrimPrefix(base, "_")
	name := base
	for i := 2; s.byName[name] != ""; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	s.byValue[value], s.byName[name] = name, value
	if len(value) >= minScrub {
		s.long = append(s.long, value)
		sort.SliceStable(s.long, func(i, j int) bool { return len(s.long[i]) > len(s.long[j]) })
	}
}

// ref returns ${env:NAME} for a value add noted, and marks its variable
// used; an empty value (add notes none) is written as it is.
func (s *secrets) ref(value string) string {
	name, ok := s.byValue[value]
	if !ok {
		return escapeVars(value)
	}
	if !s.isUsed[name] {
		s.isUsed[name] = true
		s.used = append(s.used, name)
	}
	return "${env:" + name + "}"
}

// contains reports whether text holds a secret.
func (s *secrets) contains(text string) bool {
	if _, ok := s.byValue[text]; ok {
		return true
	}
	for _, v := range s.long {
		if strings.Contains(text, v) {
			return true
		}
	}
	return false
}

// literal writes recorded text into a template: every secret as its
// variable, ${ as $${ (the plan's own escape), and, in JSON, {{ inside a
// string as {\u007b (the same string; a template cannot write {{).
func (s *secrets) literal(text string, json bool) string {
	var b strings.Builder
	for text != "" {
		at, val := -1, ""
		for _, v := range s.long {
			if i := strings.Index(text, v); i >= 0 && (at < 0 || i < at) {
				at, val = i, v
			}
		}
		if at < 0 {
			b.WriteString(escape(text, json))
			break
		}
		b.WriteString(escape(text[:at], json))
		b.WriteString(s.ref(val))
		text = text[at+len(val):]
	}
	return b.String()
}

// escape writes recorded text for a template.
func escape(text string, json bool) string {
	text = escapeVars(text)
	if json {
		text = strings.ReplaceAll(text, "{{", `{\u007b`)
	}
	return text
}

// leaked returns the variable of a secret of at least minScrub bytes that
// plan still holds, "" when none does.
func (s *secrets) leaked(plan []byte) string {
	text := string(plan)
	for _, v := range s.long {
		if strings.Contains(text, v) {
			return s.byValue[v]
		}
	}
	return ""
}
