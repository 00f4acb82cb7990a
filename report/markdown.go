package report

import (
	"io"
	"strings"

	"github.com/wsplan/wsplan/internal/result"
)

// Markdown writes the whole report as one Markdown document, for --summary
// files (a CI job summary, a pull request comment): a heading with the plan's
// name and description, the host banner in a code block, the phase tables,
// the assertions, and the log tails of servers that failed. baseline may be
// nil; otherwise the tables show changes against it, as Tables does.
func Markdown(w io.Writer, run *result.Run, baseline *result.Run) error {
	ew := &errWriter{w: w}
	run, baseline = result.Collapse(run), result.Collapse(baseline)
	title := run.Plan.Name
	if title == "" {
		title = run.Plan.File
	}
	if title == "" {
		ew.printf("# wsplan report\n\n")
	} else {
		ew.printf("# wsplan: %s\n\n", title)
	}
	if d := strings.TrimSpace(run.Plan.Description); d != "" {
		ew.printf("%s\n\n", d)
	}
	if run.Interrupted {
		ew.printf("> **Interrupted**: the run was stopped before the end; the tables hold what was measured until then.\n\n")
	}
	if run.Aborted != "" {
		ew.printf("> **Stopped early** (abort: true): %s.\n\n", run.Aborted)
	}

	var host strings.Builder
	if err := Host(&host, run); err != nil {
		return err
	}
	ew.printf("## Host\n\n```text\n%s\n```\n\n", strings.TrimRight(host.String(), "\n"))
	if p := run.Wsplan; p != nil && len(p.Libraries) > 0 {
		libs := make([]string, 0, len(p.Libraries))
		for _, l := range p.LibraryNames() {
			libs = append(libs, "`"+l+"` "+p.Libraries[l])
		}
		ew.printf("Libraries measured: %s.\n\n", strings.Join(libs, ", "))
	}
	ew.printf("## Results\n\n")
	if err := Tables(ew, run, baseline, FormatMarkdown); err != nil {
		return err
	}
	var charts strings.Builder
	if err := Mermaid(&charts, run); err != nil {
		return err
	}
	if charts.Len() > 0 {
		ew.printf("## Charts\n\n%s", charts.String())
	}
	if len(run.Assertions) > 0 {
		ew.printf("## Assertions\n\n")
		if err := Assertions(ew, run, FormatMarkdown); err != nil {
			return err
		}
	}
	first := true
	for _, r := range run.Results {
		if r.OK || strings.TrimSpace(r.ServerLog) == "" {
			continue
		}
		if first {
			ew.printf("## Server logs\n\n")
			first = false
		}
		fence := codeFence(r.ServerLog)
		ew.printf("### %s, %s\n\n%s\n\n%stext\n%s\n%s\n\n", r.Server, r.Phase, oneLine(r.Error), fence, strings.TrimRight(r.ServerLog, "\n"), fence)
	}
	return ew.err
}

// codeFence returns a backtick fence longer than any backtick run in s.
func codeFence(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}
