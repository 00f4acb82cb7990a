package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PollInterval is how often Deploy looks at the shard pods while it waits.
var PollInterval = 500 * time.Millisecond

// Deployment is a run's objects in a cluster.
type Deployment struct {
	cs   Client
	spec Spec
	job  *Job
}

// Deploy creates the spec's Job, then its Secret and Service (owned by
// the Job, so the Job's TTL deletes them too), and waits up to ready for
// every shard pod to be ready. It returns the deployment, whose Delete
// the caller calls when the run ends, and the shards' pod addresses
// (ip:port, in completion-index order). A pod that cannot be scheduled,
// pull its image or start, or a Job the namespace's quota refuses, fails
// Deploy at once with the reason; ctx ending (SIGINT) fails it with ctx's
// error. When Deploy fails it has deleted what it created.
func Deploy(ctx context.Context, cs Client, s Spec, ready time.Duration) (*Deployment, []string, error) {
	d, addrs, err := deploy(ctx, cs, s, ready)
	if err != nil && d != nil {
		if derr := d.Delete(); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, nil, err
	}
	return d, addrs, err
}

func deploy(ctx context.Context, cs Client, s Spec, ready time.Duration) (*Deployment, []string, error) {
	if s.Shards < 1 {
		return nil, nil, fmt.Errorf("kubernetes: shards must be >= 1, got %d", s.Shards)
	}
	secret, svc, job, err := Objects(s)
	if err != nil {
		return nil, nil, err
	}
	ns := s.namespace()
	d := &Deployment{cs: cs, spec: s}
	created, err := cs.CreateJob(ctx, job)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes: creating job %s/%s: %w", ns, job.Name, err)
	}
	d.job = created
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(created, jobKind)}
	secret.OwnerReferences, svc.OwnerReferences = owner, owner
	if err := cs.CreateSecret(ctx, secret); err != nil {
		return d, nil, fmt.Errorf("kubernetes: creating secret %s/%s: %w", ns, secret.Name, err)
	}
	if err := cs.CreateService(ctx, svc); err != nil {
		return d, nil, fmt.Errorf("kubernetes: creating service %s/%s: %w", ns, svc.Name, err)
	}
	addrs, err := d.wait(ctx, ready)
	return d, addrs, err
}

// wait polls the Job's pods until all are ready, one fails, or time is up.
func (d *Deployment) wait(ctx context.Context, ready time.Duration) ([]string, error) {
	ns, name := d.spec.namespace(), d.spec.name()
	deadline := time.NewTimer(ready)
	defer deadline.Stop()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	var status string
	for {
		addrs, st, err := d.check(ctx)
		if err != nil {
			return nil, err
		}
		if addrs != nil {
			return addrs, nil
		}
		status = st
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kubernetes: waiting for the shards of job %s/%s: %w", ns, name, ctx.Err())
		case <-deadline.C:
			return nil, fmt.Errorf("kubernetes: shards of job %s/%s not ready after %s: %s (kubectl -n %s describe job %s)", ns, name, ready, status, ns, name)
		case <-tick.C:
		}
	}
}

// Waiting reasons that will not resolve by waiting.
var fatalWaiting = map[string]string{
	"ErrImagePull":               "image pull",
	"ImagePullBackOff":           "image pull",
	"InvalidImageName":           "image name",
	"CreateContainerConfigError": "container config",
	"CreateContainerError":       "container",
}

// check looks once: the addresses when every shard is ready, else a
// status line; an error when a shard cannot become ready.
func (d *Deployment) check(ctx context.Context) ([]string, string, error) {
	ns, name := d.spec.namespace(), d.spec.name()
	job, err := d.cs.GetJob(ctx, ns, name)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes: job %s/%s: %w", ns, name, err)
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == JobFailed || c.Type == JobFailureTarget) && c.Status == ConditionTrue {
			return nil, "", fmt.Errorf("kubernetes: job %s/%s failed: %s: %s", ns, name, c.Reason, c.Message)
		}
	}
	if err := d.quota(ctx); err != nil {
		return nil, "", err
	}
	pods, err := d.cs.ListPods(ctx, ns, LabelRun+"="+d.spec.RunID)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes: pods of job %s/%s: %w", ns, name, err)
	}
	type shardPod struct {
		index int
		addr  string
	}
	var readyPods []shardPod
	var pending []string
	for _, p := range pods {
		if err := podFailure(p); err != nil {
			return nil, "", fmt.Errorf("kubernetes: shard pod %s/%s: %w", ns, p.Name, err)
		}
		if !podReady(p) || p.Status.PodIP == "" {
			pending = append(pending, p.Name+" "+string(p.Status.Phase))
			continue
		}
		idx, _ := strconv.Atoi(p.Annotations[JobCompletionIndexAnnotation])
		readyPods = append(readyPods, shardPod{idx, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(d.spec.port())))})
	}
	if len(readyPods) >= d.spec.Shards {
		sort.Slice(readyPods, func(i, j int) bool { return readyPods[i].index < readyPods[j].index })
		addrs := make([]string, d.spec.Shards)
		for i := range addrs {
			addrs[i] = readyPods[i].addr
		}
		return addrs, "", nil
	}
	st := fmt.Sprintf("%d of %d pods created, %d ready", len(pods), d.spec.Shards, len(readyPods))
	if len(pending) > 0 {
		st += "; pending: " + strings.Join(pending, ", ")
	}
	return nil, st, nil
}

// podFailure says why a pod will never be ready, or nil.
func podFailure(p Pod) error {
	for _, c := range p.Status.Conditions {
		if c.Type == PodScheduled && c.Status == ConditionFalse && c.Reason == PodReasonUnschedulable {
			return fmt.Errorf("unschedulable: %s (check kubernetes.node_selector, kubernetes.resources and spread)", c.Message)
		}
	}
	if p.Status.Phase == PodFailed {
		return fmt.Errorf("failed: %s %s", p.Status.Reason, p.Status.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			if what, ok := fatalWaiting[w.Reason]; ok {
				return fmt.Errorf("%s: %s: %s (check kubernetes.image)", what, w.Reason, w.Message)
			}
		}
		if t := cs.State.Terminated; t != nil {
			return fmt.Errorf("shard exited: %s (code %d): %s", t.Reason, t.ExitCode, t.Message)
		}
	}
	return nil
}

func podReady(p Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == PodReady {
			return c.Status == ConditionTrue
		}
	}
	return false
}

// quota reports the Job controller's failure to create pods (a
// ResourceQuota or LimitRange refusing them), from the Job's events.
func (d *Deployment) quota(ctx context.Context) error {
	ns, name := d.spec.namespace(), d.spec.name()
	evs, err := d.cs.ListEvents(ctx, ns, "involvedObject.name="+name)
	if err != nil {
		return nil // events are a hint; the timeout still says what is missing
	}
	for _, e := range evs {
		if e.InvolvedObject.Name == name && e.Reason == "FailedCreate" {
			return fmt.Errorf("kubernetes: job %s/%s cannot create its pods: %s", ns, name, e.Message)
		}
	}
	return nil
}

// Delete removes the run's Job (with its pods, in the background), Service
// and Secret; objects already gone are fine. It uses its own timeout, so
// it works after the run's context ended.
func (d *Deployment) Delete() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, name := d.spec.namespace(), d.spec.name()
	var errs []error
	for _, r := range []Resource{Jobs, Services, Secrets} {
		if err := d.cs.Delete(ctx, r, ns, name); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("kubernetes: deleting %s %s/%s: %w", strings.TrimSuffix(string(r), "s"), ns, name, err))
		}
	}
	return errors.Join(errs...)
}
