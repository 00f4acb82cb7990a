package plan

import (
	"fmt"

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
			{Name: "pool_size", Type: frameworks.TypeInt, Default: "0", Max: 1000, Doc: "workers"},
		},
		Check: func(v map[string]string) error {
			c := frameworks.Config{Values: v}
			if c.String("mode") == "pool" && c.Int("pool_size") < 1 {
				return fmt.Errorf("mode pool needs pool_size >= 1, got %d", c.Int("pool_size"))
			}
			return nil
		},
	})
	frameworks.RegisterPreset(frameworks.Preset{
		Name:      "fake_plan_test_pool",
		Framework: "fake_plan_test",
		Options:   map[string]string{"mode": "pool", "pool_size": "4"},
		Doc:       "fake, worker pool",
	})
}
