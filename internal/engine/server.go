package engine

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/internal/plan"
)

// serverAddrs returns the listen addresses of the i-th server: each server
// gets its own port range so TIME_WAIT sockets of one never starve the next.
func serverAddrs(p *plan.Plan, i int, srv plan.Server) []string {
	if len(srv.Command) > 0 || len(srv.Addrs) > 0 {
		return srv.Addrs
	}
	base := p.Defaults.BasePort + i*p.Defaults.Ports
	out := make([]string, p.Defaults.Ports)
	for k := range out {
		out[k] = joinHostPort(p.Defaults.Host, base+k)
	}
	return out
}

func joinHostPort(h string, port int) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(port)
	}
	return h + ":" + strconv.Itoa(port)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func (e *runner) logPath(name string) string {
	if e.o.OutDir == "" {
		return ""
	}
	return filepath.Join(e.o.OutDir, "server-"+unsafeName.ReplaceAllString(e.plan.Redact(name), "_")+e.logTag+".log")
}
