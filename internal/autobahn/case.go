package autobahn

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Case is one Autobahn|Testsuite fuzzingclient case: what the client sends
// and which server behaviors earn which verdict.
type Case struct {
	// ID is Autobahn's case id, e.g. "6.4.1".
	ID string
	// Description says what the client sends (Autobahn's DESCRIPTION,
	// without its HTML).
	Description string
	// Expectation says what a conformant server does.
	Expectation string
	// Big marks the heavy cases: 1 MiB messages and up (9.1.3-9.1.6,
	// 9.2.3-9.2.6, 9.3-9.6) and 1000 compressed messages of 4 KiB and up
	// (12.x.5-18, 13.x.5-18).
	Big bool

	key           []int                      // ID as numbers, for ordering
	open          func(s *session)           // Autobahn's onOpen
	onMessage     func(s *session, ev event) // replaces "record and finish when done" (9.x)
	post          func(s *session)           // after judging (Autobahn's onConnectionLost overrides)
	suppressClose bool                       // finishWhenDone does not start the closing handshake
	offers        []deflateOffer             // permessage-deflate offers (12.x, 13.x); nil: no extension offered
}

var registry = map[string]*Case{}

// loadCases registers every case, once, when the first caller asks for
// them: a wsplan process that runs no conformance phase (a server, a
// shard, most runs) never builds the ~500 cases' table (about 1 MB and
// 2.5 ms at start-up, counted in every server's memory figure, when it was
// built in init).
var loadCases = sync.OnceFunc(func() {
	registerSections1To5()
	registerSection6()
	registerSections7To9()
	registerSections12And13()
})

func register(c *Case) {
	if _, dup := registry[c.ID]; dup {
		panic("autobahn: case " + c.ID + " registered twice")
	}
	for _, p := range strings.Split(c.ID, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			panic("autobahn: bad case id " + c.ID)
		}
		c.key = append(c.key, n)
	}
	registry[c.ID] = c
}

// Cases returns every implemented case in case-id order (1.1.1, 1.1.2, …,
// 2.1, 2.2, …, 2.10).
func Cases() []*Case {
	loadCases()
	out := make([]*Case, 0, len(registry))
	for _, c := range registry {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Case) int { return slices.Compare(a.key, b.key) })
	return out
}

// Select returns the cases matching any include pattern and no exclude
// pattern, in case-id order. A pattern is a case id ("2.10") or a glob where
// * matches any run of characters, dots included ("6.4.*", "1.*", "*").
// An empty include list means every case. A pattern that matches no case is
// an error, so a typo does not silently shrink the run.
func Select(include, exclude []string) ([]*Case, error) {
	if len(include) == 0 {
		include = []string{"*"}
	}
	all := Cases()
	for _, p := range append(slices.Clone(include), exclude...) {
		if !slices.ContainsFunc(all, func(c *Case) bool { return match(p, c.ID) }) {
			return nil, fmt.Errorf("case pattern %q matches no implemented case", p)
		}
	}
	var out []*Case
	for _, c := range all {
		in := slices.ContainsFunc(include, func(p string) bool { return match(p, c.ID) })
		ex := slices.ContainsFunc(exclude, func(p string) bool { return match(p, c.ID) })
		if in && !ex {
			out = append(out, c)
		}
	}
	return out, nil
}

// match reports whether id matches the glob p (* = any characters).
func match(p, id string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == id
	}
	if !strings.HasPrefix(id, parts[0]) {
		return false
	}
	id = id[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(id, mid)
		if i < 0 {
			return false
		}
		id = id[i+len(mid):]
	}
	return strings.HasSuffix(id, last) && len(id) >= len(last)
}
