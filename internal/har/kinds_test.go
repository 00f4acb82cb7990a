package har

// The built-in phase kinds register themselves in their packages' init:
// this package's tests load plans and walk the kinds, so they import
// every kind.
import _ "github.com/wsplan/wsplan/scenarios/all"
