package plan

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

// setDefaults fills every zero plan-level field with its documented
// default (the Default* constants, stated in each field's doc tag). It is
// the only place plan defaults are applied.
func (l *loader) setDefaults(p *Plan) {
	if p.Name == "" {
		base := filepath.Base(p.File)
		p.Name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if p.Repeat == 0 {
		p.Repeat = DefaultRepeat
	}
	d := &p.Defaults
	if d.NoDelay == nil {
		t := DefaultNoDelay
		d.NoDelay = &t
	}
	orDuration(&d.ReadyTime, DefaultReadyTimeout)
	orDuration(&d.StopGrace, DefaultStopGrace)
	orDuration(&d.Sample, DefaultSampleInterval)
	if d.Ports == 0 {
		d.Ports = DefaultPorts
	}
	if d.BasePort == 0 {
		d.BasePort = DefaultBasePort
	}
	if d.Host == "" {
		d.Host = DefaultListen
	}
	orDuration(&p.Client.IdleExit, DefaultIdleExit)
	p.Client.Reconnect.setDefaults()
	if p.Soak.LeakThreshold == 0 {
		p.Soak.LeakThreshold = DefaultLeakThreshold
	}
	orDuration(&p.Metrics.Interval, DefaultMetricsInterval)
	if k := p.Client.Kubernetes; k != nil {
		if k.Namespace == "" {
			k.Namespace = DefaultKubeNamespace
		}
		if k.Shards == 0 {
			k.Shards = DefaultKubeShards
		}
		if k.Port == 0 {
			k.Port = DefaultKubePort
		}
		// spread: is the one key whose default is true: unwritten (or
		// null) is not false.
		if !l.lines.isGiven("client.kubernetes.spread") {
			k.Spread = true
		}
		orDuration(&k.ReadyTimeout, DefaultKubeReadyTimeout)
		orDuration(&k.ActiveDeadline, DefaultKubeActiveDeadline)
		orDuration(&k.TTL, DefaultKubeTTL)
	}
	for i := range p.Servers {
		if p.Servers[i].Path == "" {
			p.Servers[i].Path = DefaultPath
		}
	}
}

// orDuration sets a zero duration to its default.
func orDuration(v *units.Duration, d time.Duration) {
	if *v == 0 {
		*v = units.Duration(d)
	}
}
