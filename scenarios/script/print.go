package script

import (
	"fmt"
	"slices"
	"strings"

	lang "github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/scenarios"
)

// The script's parameters by where Describe prints them: the arrivals'
// (closed or open) on their own line, the nested ones on theirs, the rest
// on the phase's line.
var (
	scriptClosedKeys = []string{"users", "concurrency", "iterations", "duration"}
	scriptOpenKeys   = []string{"arrival_rate", "duration", "max_users", "iterations", "late_after"}
	scriptOwnLines   = []string{"data", "query", "headers", "ignore", "steps"}
)

// Describe implements Describer: the connection's parameters on the
// phase's line; then the arrivals (closed or open, with their
// parameters), the data rows users take, the upgrade request's query and
// headers, the ignored messages, and the steps, one a line, a loop's
// steps indented under it.
func (p *Phase) Describe() []string {
	arrival := slices.Concat(scriptClosedKeys, scriptOpenKeys)
	out := []string{scenarios.FlowParams(p, func(k string) bool {
		return !slices.Contains(arrival, k) && !slices.Contains(scriptOwnLines, k)
	})}
	mode, keys := "closed", scriptClosedKeys
	if p.ArrivalRate > 0 {
		mode, keys = "open", scriptOpenKeys
	}
	out = append(out, "arrivals: "+mode+" "+scenarios.FlowParams(p, func(k string) bool {
		return slices.Contains(keys, k) && (k != "duration" || p.Duration > 0)
	}))
	if p.Data != nil {
		line := "data: " + lang.Short(p.Data)
		if p.rows != nil {
			rows := "rows"
			if p.rows.Total == 1 {
				rows = "row"
			}
			line += fmt.Sprintf(" (%d %s; columns %s)", p.rows.Total, rows, strings.Join(p.rows.Columns, ", "))
		}
		out = append(out, line)
	}
	if p.Query != "" {
		out = append(out, "query: "+lang.Short(p.Query))
	}
	if len(p.Headers) > 0 {
		out = append(out, "headers: "+lang.Short(p.Headers))
	}
	if len(p.Ignore) > 0 {
		ignore := make([]string, len(p.Ignore))
		for i, m := range p.Ignore {
			ignore[i] = lang.Short(m)
		}
		out = append(out, "ignore: ["+strings.Join(ignore, ", ")+"]")
	}
	out = append(out, "steps:")
	for _, l := range lang.Lines(p.Steps) {
		out = append(out, "  "+l)
	}
	return out
}
