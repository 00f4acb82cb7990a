package kube

import (
	"bytes"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestClientObjects: NewClient's calls create, get and delete the spec's
// objects at their REST paths, intact, with the API's errors for what is
// missing or already there.
func TestClientObjects(t *testing.T) {
	api := newFakeAPI(t)
	cs := api.client(t)
	ctx := t.Context()
	s := testSpec(t, 7070)
	secret, svc, job, err := Objects(s)
	if err != nil {
		t.Fatal(err)
	}
	created, err := cs.CreateJob(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if created.Name != s.name() || created.UID == "" || *created.Spec.Completions != 2 {
		t.Errorf("created job %s uid %q completions %d, want %s with a uid and 2", created.Name, created.UID, *created.Spec.Completions, s.name())
	}
	if err := cs.CreateSecret(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := cs.CreateService(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CreateJob(ctx, job); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second CreateJob: %v, want AlreadyExists", err)
	}
	o, ok := api.get("secrets", "bench", s.name())
	if !ok || !bytes.Equal(o.(*Secret).Data["shard.key"], s.Certs["shard.key"]) {
		t.Errorf("stored secret %v, want the shard key", o)
	}
	o, ok = api.get("services", "bench", s.name())
	if !ok || o.(*Service).Spec.ClusterIP != ClusterIPNone {
		t.Errorf("stored service %v, want headless", o)
	}
	got, err := cs.GetJob(ctx, "bench", s.name())
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != created.UID || *got.Spec.CompletionMode != IndexedCompletion || got.Spec.Template.Spec.Containers[0].Image != s.Image {
		t.Errorf("got job uid %q mode %v, want %q, Indexed, image %s", got.UID, *got.Spec.CompletionMode, created.UID, s.Image)
	}
	if _, err := cs.GetJob(ctx, "other", s.name()); !apierrors.IsNotFound(err) {
		t.Errorf("GetJob in another namespace: %v, want NotFound", err)
	}
	for _, r := range []Resource{Jobs, Services, Secrets} {
		if err := cs.Delete(ctx, r, "bench", s.name()); err != nil {
			t.Errorf("Delete %s: %v", r, err)
		}
	}
	if err := cs.Delete(ctx, Jobs, "bench", s.name()); !apierrors.IsNotFound(err) {
		t.Errorf("second Delete: %v, want NotFound", err)
	}
	want := []string{"jobs/bench/" + s.name() + " Background", "services/bench/" + s.name() + " Background",
		"secrets/bench/" + s.name() + " Background", "jobs/bench/" + s.name() + " Background"}
	if d := api.deleted(); !slices.Equal(d, want) {
		t.Errorf("deletes %q, want %q", d, want)
	}
	if left := len(api.list("jobs", "")) + len(api.list("services", "")) + len(api.list("secrets", "")); left != 0 {
		t.Errorf("%d objects left", left)
	}
}

// TestClientLists: ListPods and ListEvents return the namespace's objects
// their selectors match, and the server's refusal of a selector.
func TestClientLists(t *testing.T) {
	api := newFakeAPI(t)
	cs := api.client(t)
	ctx := t.Context()
	pod := func(ns, name, run string) *Pod {
		return &Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{LabelRun: run}}}
	}
	event := func(ns, name, involved string) *Event {
		return &Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			InvolvedObject: ObjectReference{Kind: "Job", Name: involved}, Reason: "FailedCreate"}
	}
	for _, p := range []*Pod{pod("bench", "a-1", "a"), pod("bench", "a-0", "a"), pod("bench", "b-0", "b"), pod("other", "a-9", "a")} {
		api.put("pods", p)
	}
	for _, e := range []*Event{event("bench", "e1", "wsplan-a"), event("bench", "e2", "wsplan-b"), event("other", "e3", "wsplan-a")} {
		api.put("events", e)
	}
	pods, err := cs.ListPods(ctx, "bench", LabelRun+"=a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"a-0", "a-1"}) {
		t.Errorf("pods %v, want a-0, a-1", names)
	}
	if all, err := cs.ListPods(ctx, "bench", ""); err != nil || len(all) != 3 {
		t.Errorf("all pods of bench: %d, %v; want 3", len(all), err)
	}
	evs, err := cs.ListEvents(ctx, "bench", "involvedObject.name=wsplan-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Name != "e1" || evs[0].Reason != "FailedCreate" {
		t.Errorf("events %+v, want e1 only", evs)
	}
	if _, err := cs.ListEvents(ctx, "bench", "involvedObject.color=red"); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: %v, want BadRequest", err)
	}
}

// TestClientAuth: NewClient sends the config's credentials (here a bearer
// token, as a kubeconfig or the in-cluster config gives it).
func TestClientAuth(t *testing.T) {
	api := newFakeAPI(t)
	api.token = "s3cret"
	if _, err := api.client(t).GetJob(t.Context(), "bench", "none"); !apierrors.IsNotFound(err) {
		t.Errorf("with the token: %v, want NotFound", err)
	}
	cs, err := NewClient(&rest.Config{Host: api.URL, BearerToken: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.GetJob(t.Context(), "bench", "none"); !apierrors.IsUnauthorized(err) {
		t.Errorf("with another token: %v, want Unauthorized", err)
	}
}
