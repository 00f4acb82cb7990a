package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/wsplan/wsplan/internal/testenv"
)

// The GitHub Action (action.yml) run in a simulated job: its steps in
// order, run: steps with bash as the runner runs them (GITHUB_OUTPUT per
// step, GITHUB_STEP_SUMMARY, GITHUB_WORKSPACE, GITHUB_ACTION_PATH,
// RUNNER_TEMP; ${{ }} expressions substituted), uses: steps recorded, and
// wsplan given as a binary (wsplan-bin) since a test has no network to
// install it.

// actionFile is what the simulation reads of action.yml.
type actionFile struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Author      string            `yaml:"author"`
	Branding    map[string]string `yaml:"branding"`
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Required    bool   `yaml:"required"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	Env   map[string]string `yaml:"env"`
	With  map[string]string `yaml:"with"`
}

// jobRun is what a simulated job left: the job summary, every step's
// outputs, the action's outputs, the artifact's paths.
type jobRun struct {
	workspace string
	summary   string
	steps     map[string]map[string]string // step id → its outputs
	outputs   map[string]string            // the action's
	ran       []string                     // steps run, by name
	failed    string                       // the step that failed, "" = none
	code      int                          // its exit code
	artifact  []string                     // upload-artifact's paths, as given
	log       bytes.Buffer                 // what the steps printed
}

// actionRoot is the repository's root: GITHUB_ACTION_PATH.
func actionRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func readAction(t *testing.T) *actionFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(actionRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return &a
}

var exprRx = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// simulateJob runs action.yml's steps with inputs in workspace.
func simulateJob(t *testing.T, workspace string, inputs map[string]string) *jobRun {
	t.Helper()
	a := readAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q, want composite", a.Runs.Using)
	}
	for name := range inputs {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("input %q: action.yml has no such input", name)
		}
	}
	for name, in := range a.Inputs {
		if _, ok := inputs[name]; !ok {
			if in.Required {
				t.Fatalf("input %q is required", name)
			}
			inputs[name] = in.Default
		}
	}
	j := &jobRun{workspace: workspace, steps: map[string]map[string]string{}}
	tmp := t.TempDir()
	summaryFile := filepath.Join(tmp, "step_summary.md")
	value := func(ref string) string {
		switch parts := strings.Split(ref, "."); {
		case len(parts) == 2 && parts[0] == "inputs":
			v, ok := inputs[parts[1]]
			if !ok {
				t.Fatalf("${{ %s }}: no such input", ref)
			}
			return v
		case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
			return j.steps[parts[1]][parts[3]]
		case ref == "github.action_path":
			return actionRoot(t)
		}
		t.Fatalf("${{ %s }}: the simulation knows inputs.*, steps.*.outputs.* and github.action_path", ref)
		return ""
	}
	subst := func(s string) string {
		return exprRx.ReplaceAllStringFunc(s, func(m string) string { return value(exprRx.FindStringSubmatch(m)[1]) })
	}
	for i, st := range a.Runs.Steps {
		if !j.condition(t, st.If, value) {
			continue
		}
		j.ran = append(j.ran, st.Name)
		switch {
		case strings.HasPrefix(st.Uses, "actions/upload-artifact@"):
			for _, p := range strings.Split(strings.TrimSpace(subst(st.With["path"])), "\n") {
				j.artifact = append(j.artifact, strings.TrimSpace(p))
			}
		case st.Uses != "":
			t.Fatalf("step %q: uses %s, which the simulation does not run (a test gives wsplan-bin)", st.Name, st.Uses)
		default:
			if st.Shell != "bash" {
				t.Fatalf("step %q: shell %q, want bash", st.Name, st.Shell)
			}
			out := filepath.Join(tmp, "output-"+strconv.Itoa(i))
			script := filepath.Join(tmp, "step-"+strconv.Itoa(i)+".sh")
			if err := os.WriteFile(script, []byte(subst(st.Run)), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script) // as the runner runs shell: bash
			cmd.Dir = workspace
			cmd.Env = append(os.Environ(), "GITHUB_OUTPUT="+out, "GITHUB_STEP_SUMMARY="+summaryFile,
				"GITHUB_PATH="+filepath.Join(tmp, "path"), "GITHUB_WORKSPACE="+workspace,
				"GITHUB_ACTION_PATH="+actionRoot(t), "RUNNER_TEMP="+tmp)
			for k, v := range st.Env {
				cmd.Env = append(cmd.Env, k+"="+subst(v))
			}
			cmd.Stdout, cmd.Stderr = &j.log, &j.log
			err := cmd.Run()
			if st.ID != "" {
				j.steps[st.ID] = readOutputs(t, out)
			}
			if err != nil {
				j.failed, j.code = st.Name, cmd.ProcessState.ExitCode()
			}
		}
	}
	j.outputs = map[string]string{}
	for name, o := range a.Outputs {
		j.outputs[name] = subst(o.Value)
	}
	b, _ := os.ReadFile(summaryFile) // no summary: ""
	j.summary = string(b)
	return j
}

// condition evaluates a step's if: as the runner would, for the forms
// action.yml uses: always(), success() (the default), and inputs
// compared with a string, joined by &&.
func (j *jobRun) condition(t *testing.T, expr string, value func(string) string) bool {
	t.Helper()
	expr = strings.TrimSpace(exprRx.ReplaceAllString(expr, "$1"))
	if expr == "" {
		return j.failed == ""
	}
	ok, always := true, false
	for _, term := range strings.Split(expr, "&&") {
		term = strings.TrimSpace(term)
		switch {
		case term == "always()":
			always = true
		case term == "success()":
			ok = ok && j.failed == ""
		case strings.Contains(term, "=="), strings.Contains(term, "!="):
			op := "=="
			if strings.Contains(term, "!=") {
				op = "!="
			}
			l, r, _ := strings.Cut(term, op)
			lit := strings.Trim(strings.TrimSpace(r), "'")
			ok = ok && (value(strings.TrimSpace(l)) == lit) == (op == "==")
		default:
			t.Fatalf("if: %q: the simulation knows always(), success(), == and != with a string, and &&", expr)
		}
	}
	return ok && (always || j.failed == "")
}

// readOutputs reads a GITHUB_OUTPUT file (name=value lines).
func readOutputs(t *testing.T, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

// actionPlan is a small plan whose assertion's bound is a var:
// --set bound=1ns fails it.
const actionPlan = `vars: {port: 9000, bound: 1s}
defaults: {base_port: ${port}}
servers: [{name: gws}]
phases:
  - connect: {connections: 10}
  - echo: {total: 200, payload: 64}
assert:
  - name: echo p99
    phase: echo
    expr: p99 < duration("${bound}")
`

// newWorkspace is a job's workspace holding plan.yaml.
func newWorkspace(t *testing.T, plan string) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "plan.yaml"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// checkArtifact checks that every path the artifact step lists exists.
func (j *jobRun) checkArtifact(t *testing.T) {
	t.Helper()
	if len(j.artifact) < 5 {
		t.Fatalf("the artifact keeps %v, want the JSON, HTML, JUnit, summary and logs", j.artifact)
	}
	for _, p := range j.artifact {
		if _, err := os.Stat(filepath.Join(j.workspace, p)); err != nil {
			t.Errorf("artifact path %s: %v", p, err)
		}
	}
}

// TestActionPass: the plan `wsplan init --ci` wrote, run by the action:
// every step runs but Go's set-up, the job summary has the verdict, the
// report's tables, charts and assertions, the outputs name the files,
// and the artifact keeps them.
func TestActionPass(t *testing.T) {
	testenv.Slow(t, "2 s: the CI gate passing, through the CLI")
	ws := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"init", "--ci", "--conns", "10", filepath.Join(ws, "gate.yaml")}, &stdout, &stderr); code != 0 {
		t.Fatalf("init: %s", stderr.String())
	}
	j := simulateJob(t, ws, map[string]string{
		"plan":       "gate.yaml",
		"args":       "--set port=" + strconv.Itoa(freeBasePort(t, 1)) + " --set echoes=50 --set duration=1s --set p99=5s --set handshake_p99=5s",
		"wsplan-bin": mustLook(t),
	})
	t.Logf("job summary:\n%s", j.summary)
	t.Logf("outputs: install %v, run %v; the action's: %v", j.steps["install"], j.steps["run"], j.outputs)
	if j.failed != "" {
		t.Fatalf("step %q failed (exit %d):\n%s", j.failed, j.code, j.log.String())
	}
	if want := []string{"Install wsplan", "Run the plan", "Keep the results", "Verdict"}; strings.Join(j.ran, ",") != strings.Join(want, ",") {
		t.Errorf("steps run %v, want %v", j.ran, want)
	}
	for k, want := range map[string]string{"exit-code": "0", "passed": "true", "assertions": "3", "assertions-failed": "0",
		"json": "wsplan-results/results.json", "junit": "wsplan-results/junit.xml", "html": "wsplan-results/report.html",
		"summary": "wsplan-results/summary.md"} {
		if j.outputs[k] != want {
			t.Errorf("output %s = %q, want %q", k, j.outputs[k], want)
		}
	}
	if !strings.HasPrefix(j.outputs["version"], "wsplan ") {
		t.Errorf("output version %q", j.outputs["version"])
	}
	for _, want := range []string{"## wsplan: PASS — `gate.yaml`", "Assertions: 3, failed: 0.", "## Results", "[BenchEcho] Report",
		"```mermaid", "[Assertions] Report", "| gws    | echo    | echo p99 ", "3 assertions: 3 passed, 0 failed"} {
		if !strings.Contains(j.summary, want) {
			t.Errorf("job summary: no %q", want)
		}
	}
	j.checkArtifact(t)
}

// TestActionFail: a failed assertion fails the job at the verdict step
// with wsplan's exit code, after the artifact was kept; fail-on-error:
// false lets the job go on with the same outputs. A bad plan is exit 2
// with wsplan's error in the summary; a wsplan-bin that is not there
// fails the install, and nothing runs but the artifact step.
func TestActionFail(t *testing.T) {
	testenv.Slow(t, "7 s: the CI gate failing on assertions, through the CLI")
	bin := mustLook(t)
	port := " --set port=" + strconv.Itoa(freeBasePort(t, 1))
	for _, c := range []struct {
		name, plan string
		inputs     map[string]string
		failed     string // the step that fails
		code       int    // its exit code, and the run's
		summary    []string
	}{
		{"assertion", actionPlan, map[string]string{"args": "--set bound=1ns" + port}, "Verdict", 1,
			[]string{"## wsplan: FAIL (exit 1)", "Assertions: 1, failed: 1.", "| FAIL "}},
		{"assertion, fail-on-error false", actionPlan, map[string]string{"args": "--set bound=1ns" + port, "fail-on-error": "false"}, "", 1,
			[]string{"## wsplan: FAIL (exit 1)", "| FAIL "}},
		{"bad plan", "servers: [{name: gws}]\nphases: [{echo: {totl: 5}}]\n", nil, "Verdict", 2,
			[]string{"## wsplan: FAIL (exit 2)", "wsplan wrote no report:", "totl"}},
		{"no wsplan", actionPlan, map[string]string{"wsplan-bin": "/nonexistent/wsplan"}, "Install wsplan", 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := newWorkspace(t, c.plan)
			in := map[string]string{"plan": "plan.yaml", "wsplan-bin": bin}
			for k, v := range c.inputs {
				in[k] = v
			}
			j := simulateJob(t, ws, in)
			if j.failed != c.failed || (c.failed != "" && j.code != c.code) {
				t.Fatalf("failed step %q (exit %d), want %q (exit %d); log:\n%s", j.failed, j.code, c.failed, c.code, j.log.String())
			}
			if c.failed == "Install wsplan" {
				if strings.Join(j.ran, ",") != "Install wsplan,Keep the results" || !strings.Contains(j.log.String(), "::error title=wsplan::wsplan-bin /nonexistent/wsplan") {
					t.Errorf("steps run %v; log:\n%s", j.ran, j.log.String())
				}
				return
			}
			if j.outputs["exit-code"] != strconv.Itoa(c.code) || j.outputs["passed"] != "false" {
				t.Errorf("outputs exit-code %q, passed %q; want %d, false", j.outputs["exit-code"], j.outputs["passed"], c.code)
			}
			if !strings.Contains(strings.Join(j.ran, ","), "Keep the results") {
				t.Errorf("steps run %v: the artifact was not kept", j.ran)
			}
			for _, want := range c.summary {
				if !strings.Contains(j.summary, want) {
					t.Errorf("job summary: no %q in\n%s", want, j.summary)
				}
			}
			if c.code == 1 {
				j.checkArtifact(t)
			}
		})
	}
}

// TestActionBaseline: a run of 4 repeats against a baseline of 4: the
// job summary says it compared, and every figure carries its change
// with a p-value; a baseline that is not there is noted, not fatal.
func TestActionBaseline(t *testing.T) {
	testenv.Slow(t, "4 s: the CI gate's baseline runs through the CLI")
	t.Parallel()
	ws := newWorkspace(t, actionPlan)
	in := map[string]string{"plan": "plan.yaml", "wsplan-bin": mustLook(t), "count": "4",
		"args": "--set port=" + strconv.Itoa(freeBasePort(t, 1))}
	first := simulateJob(t, ws, in)
	if first.failed != "" || first.outputs["baseline"] != "" {
		t.Fatalf("first run: step %q failed:\n%s", first.failed, first.log.String())
	}
	data, err := os.ReadFile(filepath.Join(ws, first.outputs["json"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "baseline.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	in["baseline"] = "baseline.json"
	j := simulateJob(t, ws, in)
	t.Logf("job summary:\n%s", j.summary)
	if j.failed != "" || j.steps["run"]["baseline"] != "true" {
		t.Fatalf("step %q failed, baseline output %q:\n%s", j.failed, j.steps["run"]["baseline"], j.log.String())
	}
	for _, want := range []string{"Compared with the baseline `baseline.json`", "change against the baseline", "with repeats on both sides"} {
		if !strings.Contains(j.summary, want) {
			t.Errorf("job summary: no %q", want)
		}
	}
	if !regexp.MustCompile(`\| gws +\| \d+ ±\d+% \((~|[+-]\d+\.\d+%) p=\d\.\d{3}\)`).MatchString(j.summary) {
		t.Errorf("job summary: no tps with its change and p-value")
	}

	in["baseline"] = "nope.json"
	j = simulateJob(t, ws, in)
	if j.failed != "" || j.steps["run"]["baseline"] != "false" || !strings.Contains(j.summary, "No baseline at `nope.json` (a first run?): nothing compared.") {
		t.Errorf("missing baseline: step %q failed; summary:\n%s", j.failed, j.summary)
	}
}

// TestActionFile: action.yml's inputs are each used by a step, its
// outputs each read a step that exists, and the artifact keeps what the
// run step writes.
func TestActionFile(t *testing.T) {
	a := readAction(t)
	data, err := os.ReadFile(filepath.Join(actionRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range a.Inputs {
		used := regexp.MustCompile(`inputs\.` + regexp.QuoteMeta(name) + `([^a-z-]|$)`)
		if in.Description == "" || !used.Match(data) {
			t.Errorf("input %s: no description, or no step uses it", name)
		}
	}
	ids := map[string]bool{}
	for _, st := range a.Runs.Steps {
		ids[st.ID] = st.ID != ""
	}
	for name, o := range a.Outputs {
		m := regexp.MustCompile(`^\$\{\{ steps\.([a-z-]+)\.outputs\.[a-z-]+ \}\}$`).FindStringSubmatch(o.Value)
		if m == nil || !ids[m[1]] || o.Description == "" {
			t.Errorf("output %s: %q: want a described ${{ steps.ID.outputs.NAME }} of a step of the action", name, o.Value)
		}
	}
}
