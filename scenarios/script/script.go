// Package script is the script phase kind, whole: its keys and its result
// (params.go: Params, Result, Split, Merge), what an event loop runs for
// it (run.go: users, arrivals, timers; user.go: one user's steps and the
// matching of its messages, over the protocol its server speaks) and its
// plan side (script.go: the phase, its metrics, faults and report;
// results.go, print.go). The steps' language is internal/script,
// imported here as lang.
package script

import (
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/decl"
	"github.com/wsplan/wsplan/internal/metrics"
	lang "github.com/wsplan/wsplan/internal/script"
	"github.com/wsplan/wsplan/scenarios"
)

// Phase is a scripted conversation (internal/script): every user opens
// its own connection, runs the steps (send from templates, expect
// matching messages, think, loop, close) and closes it. Users arrive
// closed (users: N from the start, each running the steps iterations
// times or for a duration) or open (arrival_rate users per second for a
// duration, each on a new connection). Every named exchange (expect's
// as:) is timed from the scheduled time of its send, so a late client or
// a stalled server shows (no coordinated omission).
type Phase struct {
	Params `yaml:",inline"`

	rows *lang.Rows // read by Validate
	dir  string     // the plan's directory
}

// The script kind's metric names.
const (
	scriptUsers       = "users"
	scriptArrivals    = "arrivals"
	scriptLate        = "late"
	scriptDropped     = "dropped"
	scriptOpenFailed  = "open_failed"
	scriptFinished    = "users_finished"
	scriptAborted     = "users_aborted"
	scriptCut         = "users_cut"
	scriptPeak        = "users_peak"
	scriptMemPerUser  = "client_mem_per_user"
	scriptIterations  = "iterations"
	scriptSent        = "sent"
	scriptReceived    = "received"
	scriptUnexpected  = "unexpected"
	scriptUnexpUsers  = "unexpected_users"
	scriptIgnored     = "ignored"
	scriptExchanges   = "exchanges"
	scriptExchRate    = "exchange_rate"
	scriptEER         = "eer"
	scriptTimeouts    = "timeouts"
	scriptMismatched  = "mismatched"
	scriptExchFailed  = "failed"
	scriptUsersFailed = "users_failed"
	scriptAnswers     = "answers"
	scriptErrors      = "errors"
	scriptDowngraded  = "downgraded"
	scriptReceiveMax  = "receive_maximum"
	scriptConnectP50  = "connect_p50"
	scriptConnectP99  = "connect_p99"
	scriptBytesSent   = "bytes_sent"
	scriptBytesRecv   = "bytes_recv"
	scriptUsed        = "used"
	scriptExchDetails = "exchange_detail"
)

// Per-exchange metric suffixes: an exchange named login has login_count,
// login_p99, … (ExchangeMetric).
const (
	exCount      = "_count"
	exRate       = "_rate"
	exP50        = "_p50"
	exP90        = "_p90"
	exP99        = "_p99"
	exP999       = "_p999"
	exMax        = "_max"
	exTimeouts   = "_timeouts"
	exMismatched = "_mismatched"
	exFailed     = "_failed"
	exErrors     = "_errors"
	exDowngraded = "_downgraded"
)

// exchangeSuffixes are the per-exchange metrics, in table order, with
// their kinds and docs.
var exchangeSuffixes = []struct {
	suffix string
	kind   metrics.Kind
	doc    string
}{
	{exCount, metrics.Count, "exchanges completed"},
	{exRate, metrics.Float, "exchanges completed per second of the phase"},
	{exP50, metrics.Duration, "latency, median: scheduled send → the reply that completes it"},
	{exP90, metrics.Duration, "latency, 90th percentile"},
	{exP99, metrics.Duration, "latency, 99th percentile"},
	{exP999, metrics.Duration, "latency, 99.9th percentile"},
	{exMax, metrics.Duration, "latency, slowest"},
	{exTimeouts, metrics.Count, "no reply in time"},
	{exMismatched, metrics.Count, "a reply for another request"},
	{exFailed, metrics.Count, "waiting when its user ended, its connection was lost or the phase ended"},
	{exErrors, metrics.Count, "the protocol answered with an error (a refusal: MQTT reason code >= 0x80, JSON-RPC error, STOMP ERROR, GraphQL error)"},
	{exDowngraded, metrics.Count, "the protocol's answer granted less than asked (MQTT: a PUBACK to a QoS 2 publish, a SUBACK of a lower QoS)"},
}

// scriptFaults are the script's counts of units that went wrong; each
// named exchange's are parts of them (Script.ExtraFaults).
var scriptFaults = []scenarios.Fault{
	{Metric: scriptOpenFailed, What: "users could not connect"},
	{Metric: scriptDropped, Of: scriptArrivals, What: "arrivals dropped: max_users were running (raise max_users, or the server answers too slowly)"},
	{Metric: scriptUsersFailed, Of: scriptUsers, What: "users lost their connection"},
	{Metric: scriptTimeouts, What: "expects got no reply in time"},
	{Metric: scriptMismatched, What: "replies mismatched (they answered another request)"},
	{Metric: scriptExchFailed, What: "expects were waiting when their user or the phase ended"},
	{Metric: scriptErrors, Of: scriptAnswers, What: "error answers"},
	{Metric: scriptDowngraded, Of: scriptAnswers, What: "answers granted less than asked (downgraded)"},
}

// exchangeFaults are a named exchange's faults, by suffix, each within
// the phase's fault of the same count; what names the exchange at %s.
var exchangeFaults = []struct{ suffix, within, what string }{
	{exTimeouts, scriptTimeouts, "%s expects got no reply in time"},
	{exMismatched, scriptMismatched, "%s replies mismatched (they answered another request)"},
	{exFailed, scriptExchFailed, "%s expects were waiting when their user or the phase ended"},
	{exErrors, scriptErrors, "error answers to %s"},
	{exDowngraded, scriptDowngraded, "%s answers granted less than asked (downgraded)"},
}

// Name is the script phase's key.
const Name = "script"

func init() {
	client.Register(client.KindOf[Params, Result](Name))
	scenarios.Register(scenarios.Kind{
		Name:       Name,
		Doc:        "scripted conversations: users send from templates and expect matching replies (by id, in any order), closed or open arrivals; each named exchange timed",
		New:        func() scenarios.Phase { return &Phase{} },
		Soak:       &scenarios.Soak{},
		Throughput: scenarios.Throughput{Metric: scriptExchRate, Unit: "exchanges/s", Messages: true},
		Title:      "[Script] Report",
		Columns: []scenarios.Column{
			{Metric: scenarios.ColFramework},
			{Header: "Users", Metric: scriptUsers, Format: scenarios.FormatInt},
			{Header: "Iterations", Metric: scriptIterations, Format: scenarios.FormatInt},
			{Header: "Exch/s", Metric: scriptExchRate, Delta: true, Format: scenarios.FormatRate},
			{Header: "Exchanges", Metric: scriptExchanges, Format: scenarios.FormatInt},
			{Header: "TP50", Metric: metrics.P50, Delta: true},
			{Header: "TP99", Metric: metrics.P99, Delta: true},
			{Header: "Timeouts", Metric: scriptTimeouts, Format: scenarios.FormatInt},
			{Header: "Mismatched", Metric: scriptMismatched, Format: scenarios.FormatInt},
			{Header: "Errors", Metric: scriptErrors, Format: scenarios.FormatInt},
			{Header: "Unexpected", Metric: scriptUnexpected, Format: scenarios.FormatInt},
			{Header: "Aborted", Metric: scriptAborted, Format: scenarios.FormatInt},
			{Metric: scenarios.ColServer},
			{Header: "Srv CPU-s/1M", Metric: metrics.ServerCPUPer1M, Delta: true, Format: scenarios.FormatFloat2},
			{Header: "Cli CPU-s/1M", Metric: metrics.ClientCPUPer1M, Delta: true, Format: scenarios.FormatFloat2},
			{Metric: scenarios.ColClientCPU},
			{Metric: scenarios.ColVerdict},
		},
		Efficiency: &scenarios.Efficiency{Rate: scriptExchRate, EER: scriptEER, Count: scriptExchanges},
		Faults:     scriptFaults,
		Metrics:    scriptMetricDefs(),
		Family:     exchangeFamily,
		Tables:     scriptTables,
		Spectra:    scriptSpectra,
	})
}

func scriptMetricDefs() []metrics.Def {
	return metrics.Join([]metrics.Def{
		{Name: scriptExchRate, Kind: metrics.Float, Doc: "exchanges completed per second, every named exchange"},
		{Name: scriptEER, Kind: metrics.Float, Doc: "exchange_rate / server cpu_avg: exchanges per second per percent of a core"},
		{Name: scriptExchanges, Kind: metrics.Count, Doc: "exchanges completed, every named exchange"},
	}, metrics.Latency, []metrics.Def{
		{Name: scriptTimeouts, Kind: metrics.Count, Doc: "expects that got no reply in time (each ends its user)"},
		{Name: scriptMismatched, Kind: metrics.Count, Doc: "replies taken for a request they did not answer (another id)"},
		{Name: scriptExchFailed, Kind: metrics.Count, Doc: "expects waiting when their user ended, their connection was lost or the phase ended"},
		{Name: scriptAnswers, Kind: metrics.Count, Doc: "the protocol's answers to the steps' messages (acks, responses, receipts, errors), named exchange or not"},
		{Name: scriptErrors, Kind: metrics.Count, Doc: "answers that refused: MQTT reason code >= 0x80 (PUBACK, PUBREC, SUBACK), JSON-RPC error, STOMP ERROR to a receipt, GraphQL error; counted by code"},
		{Name: scriptDowngraded, Kind: metrics.Count, Doc: "answers that granted less than asked: a PUBACK to a QoS 2 publish, a SUBACK of a lower QoS"},
		{Name: scriptReceiveMax, Kind: metrics.Count, Doc: "MQTT 5: the least Receive Maximum the broker announced to the users' connections (QoS > 0 publishes unanswered at once; loop inflight is held to it); absent when none did"},
		{Name: scriptUsers, Kind: metrics.Count, Doc: "users whose connection opened"},
		{Name: scriptArrivals, Kind: metrics.Count, Doc: "open arrivals due"},
		{Name: scriptLate, Kind: metrics.Count, Doc: "open arrivals dialled more than late_after after their time"},
		{Name: scriptDropped, Kind: metrics.Count, Doc: "open arrivals not started: max_users were running"},
		{Name: scriptOpenFailed, Kind: metrics.Count, Doc: "users whose connection failed after all retries"},
		{Name: scriptFinished, Kind: metrics.Count, Doc: "users that ran to their end (or a close step)"},
		{Name: scriptAborted, Kind: metrics.Count, Doc: "users ended by a timeout or a lost connection"},
		{Name: scriptUsersFailed, Kind: metrics.Count, Doc: "users ended by a lost connection (or a message their protocol could not encode)"},
		{Name: scriptCut, Kind: metrics.Count, Doc: "users still running when the phase ended"},
		{Name: scriptPeak, Kind: metrics.Count, Doc: "users running at once at most (each event loop's and shard's own peak, summed: exact when every user runs at once)"},
		{Name: scriptMemPerUser, Kind: metrics.Bytes, Doc: "(client RSS at its highest during the phase − client RSS at the phase's start) / users_peak: a user's memory, its connection's included"},
		{Name: scriptIterations, Kind: metrics.Count, Doc: "iterations completed"},
		{Name: scriptSent, Kind: metrics.Count, Doc: "messages sent"},
		{Name: scriptReceived, Kind: metrics.Count, Doc: "messages received"},
		{Name: scriptUnexpected, Kind: metrics.Count, Doc: "messages no expect waited for and no ignore pattern covered"},
		{Name: scriptUnexpUsers, Kind: metrics.Count, Doc: "users that received an unexpected message"},
		{Name: scriptIgnored, Kind: metrics.Count, Doc: "messages an ignore pattern covered"},
		{Name: scriptConnectP50, Kind: metrics.Duration, Doc: "handshake latency of the users' connections, median"},
		{Name: scriptConnectP99, Kind: metrics.Duration, Doc: "handshake latency, 99th percentile"},
		{Name: scriptBytesSent, Kind: metrics.Bytes, Doc: "message bytes sent"},
		{Name: scriptBytesRecv, Kind: metrics.Bytes, Doc: "message bytes received"},
		{Name: scriptUsed, Kind: metrics.Duration, Doc: "wall time of the phase"},
	}, scenarios.CPUPer1MDefs("exchanges", "exchanges"))
}

// ExchangeMetric is the name of a named exchange's metric: name + suffix
// (login_p99).
func ExchangeMetric(name, suffix string) string { return name + suffix }

// exchangeFamily recognises a per-exchange metric by its suffix.
func exchangeFamily(name string) (metrics.Def, bool) {
	for _, s := range exchangeSuffixes {
		if ex, ok := strings.CutSuffix(name, s.suffix); ok && ex != "" {
			return metrics.Def{Name: name, Kind: s.kind, Doc: "exchange " + ex + ": " + s.doc}, true
		}
	}
	return metrics.Def{}, false
}

// ExtraMetrics implements Extras: every named exchange's metrics.
func (p *Phase) ExtraMetrics() []metrics.Def {
	var out []metrics.Def
	for _, name := range p.exchanges() {
		for _, s := range exchangeSuffixes {
			out = append(out, metrics.Def{Name: ExchangeMetric(name, s.suffix), Kind: s.kind, Doc: "exchange " + name + ": " + s.doc})
		}
	}
	return out
}

// ExtraFaults implements Faulter: every named exchange's faults, each a
// part of the phase's (login_errors within errors), so that a plan may
// allow them exchange by exchange.
func (p *Phase) ExtraFaults() []scenarios.Fault {
	var out []scenarios.Fault
	for _, name := range p.exchanges() {
		for _, f := range exchangeFaults {
			out = append(out, scenarios.Fault{Metric: ExchangeMetric(name, f.suffix), Within: f.within, What: fmt.Sprintf(f.what, name)})
		}
	}
	return out
}

// exchanges returns the names of the exchanges, in step order.
// Credentials implements Credentialed: the upgrade's headers and query,
// and every message the steps send.
func (p *Phase) Credentials() scenarios.Credentials {
	return scenarios.Credentials{Headers: p.Headers, Query: p.Query, JSON: lang.Bodies(p.Steps)}
}

func (p *Phase) exchanges() []string { return lang.Exchanges(p.Steps) }

// Opens implements Opener: the users' connections (open arrivals: at
// most max_users at once).
func (p *Phase) Opens() (conns, concurrency int) {
	if p.ArrivalRate > 0 {
		return p.MaxUsers, p.MaxUsers
	}
	return p.Users, p.Concurrency
}

// Defaults implements ContextDefaults.
func (p *Phase) Defaults(c scenarios.Context) {
	p.dir = c.Dir
	if p.Concurrency == 0 {
		p.Concurrency = scenarios.OpenConcurrency(p.Users)
	}
	if p.Iterations == 0 && (p.Duration == 0 || p.ArrivalRate > 0) {
		p.Iterations = 1
	}
	if p.MaxUsers == 0 && p.ArrivalRate > 0 {
		p.MaxUsers = int(min(math.Ceil(float64(p.ArrivalRate)*p.Duration.D().Seconds()), DefaultMaxUsers))
		p.MaxUsers = max(p.MaxUsers, 1)
	}
	if p.Data != nil {
		decl.Defaults(p.Data)
	}
}

// DefaultMaxUsers bounds max_users' default.
const DefaultMaxUsers = 10000

// dataPath is the data file's path: relative to the plan's directory.
func (p *Phase) dataPath() string {
	if p.Data == nil || filepath.IsAbs(p.Data.File) || p.dir == "" {
		return p.Data.File
	}
	return filepath.Join(p.dir, p.Data.File)
}

// Validate implements Phase: arrivals, data, and the script compiled
// (every template, path, matcher and correlation checked).
func (p *Phase) Validate(scenarios.Context) []scenarios.FieldError {
	var errs []scenarios.FieldError
	open := p.ArrivalRate > 0
	switch {
	case open && p.Users > 0:
		errs = append(errs, scenarios.FieldError{Field: "users", Msg: "give users (closed arrivals) or arrival_rate (open arrivals), not both"})
	case !open && p.Users == 0:
		errs = append(errs, scenarios.FieldError{Field: "", Msg: "needs users (closed arrivals) or arrival_rate (open arrivals)"})
	case open && p.Duration <= 0:
		errs = append(errs, scenarios.FieldError{Field: "duration", Msg: "is required with arrival_rate: how long users arrive"})
	case open && float64(p.ArrivalRate)*p.Duration.D().Seconds() < 1:
		errs = append(errs, scenarios.FieldError{Field: "arrival_rate", Msg: fmt.Sprintf("%s/s for %s brings no user: raise arrival_rate or duration so that they bring one at least", p.ArrivalRate, p.Duration)})
	case p.ArrivalRate < 0:
		errs = append(errs, scenarios.FieldError{Field: "arrival_rate", Msg: fmt.Sprintf("must be > 0, got %s", p.ArrivalRate)})
	}
	if !open && p.Concurrency > p.Users && p.Users > 0 {
		errs = append(errs, scenarios.FieldError{Field: "concurrency", Msg: fmt.Sprintf("must be <= users (%d), got %d", p.Users, p.Concurrency)})
	}
	errs = append(errs, p.validateData()...)
	errs = append(errs, p.validateRequest()...)
	var cols []string
	if p.rows != nil {
		cols = p.rows.Columns
	}
	unread := p.Data != nil && p.rows == nil // its columns are unknown: its own error says why
	_, serrs := lang.Compile(lang.Source{Steps: p.Steps, Ignore: p.Ignore, Columns: cols, Timeout: p.Timeout.D(), AnyColumns: unread})
	for _, e := range serrs {
		errs = append(errs, scenarios.FieldError{Field: e.Field, Msg: e.Msg})
	}
	return append(errs, p.validateExchangeNames()...)
}

// validateExchangeNames refuses an exchange whose metrics would be the
// phase's own (an exchange named users has users_failed).
func (p *Phase) validateExchangeNames() []scenarios.FieldError {
	own := map[string]bool{}
	for _, d := range metrics.Join(scriptMetricDefs(), metrics.Common) {
		own[d.Name] = true
	}
	var errs []scenarios.FieldError
	for _, name := range p.exchanges() {
		for _, s := range exchangeSuffixes {
			if m := ExchangeMetric(name, s.suffix); own[m] {
				errs = append(errs, scenarios.FieldError{Field: "steps", Msg: fmt.Sprintf("exchange %q: its metric %s is one of the phase's own: name the exchange otherwise", name, m)})
			}
		}
	}
	return errs
}

// validateData reads the data file (its columns are what templates may
// name) and checks that unique has a row per user.
func (p *Phase) validateData() []scenarios.FieldError {
	if p.Data == nil {
		return nil
	}
	var errs []scenarios.FieldError
	for _, e := range decl.Check(p.Data) {
		if e.Field != "file" { // said below, with what it takes
			errs = append(errs, scenarios.FieldError{Field: "data." + e.Field, Msg: e.Msg})
		}
	}
	if p.Data.File == "" {
		return append(errs, scenarios.FieldError{Field: "data.file", Msg: "is required: a CSV or JSON Lines file"})
	}
	rows, err := lang.ReadRows(p.dataPath())
	if err != nil {
		return append(errs, scenarios.FieldError{Field: "data.file", Msg: err.Error()})
	}
	p.rows = rows
	need := int64(p.Users)
	what := "users"
	if p.ArrivalRate > 0 {
		need, what = int64(math.Floor(float64(p.ArrivalRate)*p.Duration.D().Seconds())), "arrivals"
	}
	if p.Data.Order == lang.OrderUnique && int64(rows.Total) < need {
		errs = append(errs, scenarios.FieldError{Field: "data.order", Msg: fmt.Sprintf("unique needs a row per user: %d %s, %d rows in %s", need, what, rows.Total, p.Data.File)})
	}
	return errs
}

// reservedHeaders are written by the client itself.
var reservedHeaders = []string{"Host", "Upgrade", "Connection", "Origin", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions"}

// validateRequest compiles the query and header templates (no capture
// exists before the connection: fields and rows only).
func (p *Phase) validateRequest() []scenarios.FieldError {
	var cols []string
	if p.rows != nil {
		cols = p.rows.Columns
	}
	env := &lang.Env{Columns: cols, AnyColumns: p.Data != nil && p.rows == nil}
	var errs []scenarios.FieldError
	if p.Query != "" {
		if _, err := lang.ParseTemplate(p.Query, env); err != nil {
			errs = append(errs, scenarios.FieldError{Field: "query", Msg: err.Error()})
		}
	}
	for _, k := range sortedKeys(p.Headers) {
		if contains(reservedHeaders, http.CanonicalHeaderKey(k)) {
			errs = append(errs, scenarios.FieldError{Field: "headers." + k, Msg: "the client writes this header itself"})
			continue
		}
		if _, err := lang.ParseTemplate(p.Headers[k], env); err != nil {
			errs = append(errs, scenarios.FieldError{Field: "headers." + k, Msg: err.Error()})
		}
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// params returns the client's parameters: the phase's own, with what the
// client derives from them (rows read again at run, headers in order).
func (p *Phase) params() (*Params, error) {
	q := p.Params
	if q.ArrivalRate > 0 {
		q.Iterations = max(q.Iterations, 1)
	}
	q.HeaderList = nil
	for _, k := range sortedKeys(p.Headers) {
		q.HeaderList = append(q.HeaderList, [2]string{k, p.Headers[k]})
	}
	if p.Data != nil {
		rows, err := lang.ReadRows(p.dataPath())
		if err != nil {
			return nil, err
		}
		q.Rows, q.Order = rows, string(p.Data.Order)
	}
	return &q, nil
}

// Speaks implements ProtocolSpeaker: every verb the steps use must be one
// of the protocol's, and the answers they wait for ones it gives.
func (p *Phase) Speaks(proto string) string {
	have := client.ProtocolVerbs(proto)
	var missing []string
	for _, v := range lang.Verbs(p.Steps) {
		if !contains(have, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("its steps use %s, which %s does not have (it has %s)", strings.Join(missing, ", "), protoName(proto), strings.Join(have, ", "))
	}
	rule := client.ProtocolAnswers(proto)
	if rule == nil {
		return ""
	}
	// Validate compiled the steps without knowing the protocol; what is
	// wrong only with its answers shows here.
	src := lang.Source{Steps: p.Steps, Ignore: p.Ignore, Timeout: p.Timeout.D(), AnyColumns: true}
	if _, errs := lang.Compile(src); len(errs) > 0 {
		return ""
	}
	src.Answers = rule
	if _, errs := lang.Compile(src); len(errs) > 0 {
		return errs[0].Error()
	}
	return ""
}

func protoName(p string) string {
	if p == "" {
		return "raw messages"
	}
	return p
}
