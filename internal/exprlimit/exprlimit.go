// Package exprlimit bounds the evaluation of plan expressions (expr-lang):
// one memory budget and one dry run for every expression a plan holds, the
// `assert:` entries (internal/assert) and a search phase's `slo`
// (scenarios), so both fail at load in the same way.
//
// Data flow: a compiled program is evaluated once at load against a
// zero-valued environment (DryRun): an expression that blows the memory
// budget or runs longer than DryRunTimeout fails before anything starts.
// After that, Eval evaluates it with the same budget.
package exprlimit

import (
	"fmt"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm"
)

// MemoryBudget is what one evaluation of an expression may allocate, in
// expr's units (about one per element of a range, array or map it builds):
// expr's default, conf.DefaultMemoryBudget. The dry run at load and every
// evaluation after it use the same budget.
const MemoryBudget uint = 1e6

// DryRunTimeout bounds the dry run of one expression at load. An expression
// within the memory budget evaluates in well under a millisecond to a few
// hundred; one that takes longer than this fails to load.
const DryRunTimeout = 2 * time.Second

// budgetExceeded is how expr's VM reports a blown memory budget.
const budgetExceeded = "memory budget exceeded"

// Eval evaluates prog on env within MemoryBudget.
func Eval(prog *vm.Program, env map[string]any) (any, error) {
	m := vm.VM{MemoryBudget: MemoryBudget}
	return m.Run(prog, env)
}

// DryRun runs prog on env (its zero-valued environment) and reports a
// blown memory budget or a run longer than timeout. Other runtime errors (a
// modulo by a zero metric, a missing key) depend on the values a run
// produces and are not reported.
func DryRun(prog *vm.Program, env map[string]any, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		// expr's VM cannot be interrupted: after a timeout this goroutine
		// runs on until the expression ends, and the plan fails to load,
		// so the process exits with the load error.
		_, err := Eval(prog, env)
		done <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil && strings.Contains(err.Error(), budgetExceeded) {
			return fmt.Errorf("exceeds expr's memory budget (%d) when evaluated once at load with every metric zero: build smaller ranges, arrays or strings", MemoryBudget)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("still running after %s when evaluated once at load with every metric zero: an expression must evaluate in milliseconds", timeout)
	}
}

// Builtins is the compile option every plan expression uses: a call of one
// of expr's builtin functions (duration, len, …) stays the builtin even
// when a metric has that name. The rate phase's `duration` metric would
// otherwise shadow duration(), and `p99 < duration("5ms")` would fail to
// compile with "time.Duration is not callable"; the metric itself is still
// read as `duration`.
func Builtins() expr.Option { return expr.Patch(builtinCalls{}) }

// builtinCalls turns a call of an identifier naming a builtin into a call
// of the builtin.
type builtinCalls struct{}

func (builtinCalls) Visit(n *ast.Node) {
	c, ok := (*n).(*ast.CallNode)
	if !ok {
		return
	}
	id, ok := c.Callee.(*ast.IdentifierNode)
	if !ok {
		return
	}
	if _, isBuiltin := builtin.Index[id.Value]; !isBuiltin {
		return
	}
	ast.Patch(n, &ast.BuiltinNode{Name: id.Value, Arguments: c.Arguments})
}
