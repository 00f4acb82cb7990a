package plan

import (
	"github.com/wsplan/wsplan/frameworks"
)

// A fake adapter, so the tests do not depend on which real adapters are
// registered while they are being written.
func init() {
	frameworks.Register(frameworks.Adapter{
		Name:    "fake_plan_test",
		Library: "example.com/fake",
		Doc:     "plan loader tests",
		Options: []frameworks.Option{
			{Name: "mode", Type: frameworks.TypeEnum, Enum: []string{"event", "pool"}, Default: "event", Doc: "where callbacks run"},
			{Name: "pool_size", Type: frameworks.TypeInt, Default: "0", Doc: "workers"},
		},
		Start: func(frameworks.Config) (frameworks.Server, error) { return nil, nil },
	})
	frameworks.RegisterPreset(frameworks.Preset{
		Name:      "fake_plan_test_pool",
		Framework: "fake_plan_test",
		Options:   map[string]string{"mode": "pool", "pool_size": "4"},
		Doc:       "fake, worker pool",
	})
}
