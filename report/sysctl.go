package report

import (
	"io"
	"strconv"

	"github.com/wsplan/wsplan/sysctl"
)

// Sysctl writes the host.sysctl check (`wsplan tune --check`): one row per
// key with the wanted and current values and OK, DIFF or the read error.
func Sysctl(w io.Writer, rows []sysctl.Row, format string) error {
	format, err := checkFormat(format)
	if err != nil {
		return err
	}
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		state := "OK"
		switch {
		case r.Err != nil:
			state = "ERROR: " + r.Err.Error()
		case !r.OK:
			state = "DIFF"
		}
		cells = append(cells, []string{r.Key, strconv.Quote(r.Want), strconv.Quote(r.Current), state})
	}
	return renderTable(w, format, []string{"Key", "Wanted", "Current", "State"}, cells)
}
