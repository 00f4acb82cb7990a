package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/wsplan/wsplan/internal/kube"
)

// TestKubeManifest: `wsplan kube manifest plans/1m.yaml` prints a Secret,
// a headless Service and an Indexed Job that decode strictly into
// internal/kube's API types (which `go test -tags kubeapi ./internal/kube`
// checks against k8s.io/api's), with the run's labels, deadline and TTL.
func TestKubeManifest(t *testing.T) {
	var stdout, stderr bytes.Buffer
	certs := filepath.Join(t.TempDir(), "certs")
	if code := Main([]string{"kube", "manifest", "../../plans/1m.yaml", "--certs", certs, "--run-id", "feedbeef"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	docs := strings.Split(stdout.String(), "\n---\n")
	if len(docs) != 3 {
		t.Fatalf("%d YAML documents, want Secret, Service, Job:\n%s", len(docs), stdout.String())
	}
	var (
		secret kube.Secret
		svc    kube.Service
		job    kube.Job
	)
	for i, v := range []any{&secret, &svc, &job} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), v); err != nil {
			t.Fatalf("document %d does not decode strictly into %T: %v", i, v, err)
		}
	}
	want := map[string]string{kube.LabelRun: "feedbeef", kube.LabelManagedBy: "wsplan", kube.LabelName: "wsplan-shard"}
	for _, o := range []struct {
		kind   string
		labels map[string]string
		name   string
	}{{secret.Kind, secret.Labels, secret.Name}, {svc.Kind, svc.Labels, svc.Name}, {job.Kind, job.Labels, job.Name}} {
		if o.name != "wsplan-feedbeef" {
			t.Errorf("%s named %q", o.kind, o.name)
		}
		for k, v := range want {
			if o.labels[k] != v {
				t.Errorf("%s label %s = %q, want %q", o.kind, k, o.labels[k], v)
			}
		}
	}
	if len(secret.Data) != 3 || secret.Data["shard.key"] == nil || secret.Data["orchestrator.key"] != nil {
		t.Errorf("secret keys %v, want ca.pem, shard.pem, shard.key", len(secret.Data))
	}
	if svc.Spec.ClusterIP != kube.ClusterIPNone || svc.Spec.Selector[kube.LabelRun] != "feedbeef" {
		t.Errorf("service %+v, want headless, selecting the run", svc.Spec)
	}
	js := job.Spec
	if js.CompletionMode == nil || *js.CompletionMode != kube.IndexedCompletion || *js.Completions != 2 || *js.Parallelism != 2 {
		t.Errorf("job: completion mode %v, completions %v, want Indexed × 2", js.CompletionMode, js.Completions)
	}
	if *js.ActiveDeadlineSeconds != 7200 || *js.TTLSecondsAfterFinished != 600 || *js.BackoffLimit != 0 {
		t.Errorf("job: deadline %d, ttl %d, backoff %d; want 7200, 600, 0", *js.ActiveDeadlineSeconds, *js.TTLSecondsAfterFinished, *js.BackoffLimit)
	}
	ps := js.Template.Spec
	if ps.SecurityContext == nil || !*ps.SecurityContext.RunAsNonRoot || len(ps.TopologySpreadConstraints) != 1 || ps.Subdomain != svc.Name {
		t.Errorf("pod spec: security %+v, spread %v, subdomain %q", ps.SecurityContext, ps.TopologySpreadConstraints, ps.Subdomain)
	}
	c := ps.Containers[0]
	if got := strings.Join(c.Args, " "); got != "shard --listen :7070 --certs /etc/wsplan/certs --idle-exit 30s --loops 0" {
		t.Errorf("container args %q", got)
	}
	if !strings.Contains(stdout.String(), "wsplan-feedbeef-1.wsplan-feedbeef.default.svc:7070") {
		t.Errorf("no client.remote hint for the pods:\n%s", docs[0][:300])
	}
}
